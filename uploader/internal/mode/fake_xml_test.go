package mode

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/uploader/internal/xfer"
)

// fakeGCS as the XML API's multipart upload: an upload holds the parts
// sent (a part number sent again replaces the part) until the complete
// joins them into the object, or the abort drops them.

func (g *fakeGCS) Initiate(u *xfer.Request, _ time.Duration) (string, error) {
	apply, err := g.call(u.Ctx, "initiate", u.Object)
	if !apply {
		return "", err
	}
	g.mu.Lock()
	g.nUploads++
	id := "upload-" + strconv.Itoa(g.nUploads)
	g.uploads[id] = &fakeUpload{name: u.Object, started: time.Now(), parts: map[int]fakePart{}}
	g.mu.Unlock()
	if err != nil {
		return "", err
	}
	return id, nil
}

func (g *fakeGCS) UploadPart(u *xfer.Request, id string, n int, rs []*xfer.ChunkRef, size int64, crc uint32, _ time.Duration) (string, bool, error) {
	apply, err := g.call(u.Ctx, "part", strconv.Itoa(n))
	if !apply {
		return "", true, err
	}
	data := make([]byte, 0, size)
	for _, r := range rs {
		if r.Offset != int64(len(data)) {
			g.mu.Lock()
			g.misfed = true
			g.mu.Unlock()
		}
		data = append(data, r.Data...)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	up := g.uploads[id]
	switch {
	case up == nil:
		return "", true, status.Error(codes.NotFound, "NoSuchUpload")
	case int64(len(data)) != size:
		return "", true, status.Errorf(codes.InvalidArgument, "%d bytes, Content-Length %d", len(data), size)
	case crc32c.Checksum(data) != crc:
		return "", true, status.Error(codes.DataLoss, "BadDigest")
	}
	etag := fmt.Sprintf("\"%08x-%d\"", crc, n)
	up.parts[n] = fakePart{data: data, etag: etag}
	if err != nil {
		return "", true, err
	}
	return etag, true, nil
}

func (g *fakeGCS) ListParts(u *xfer.Request, id string, _ time.Duration) ([]xfer.MultipartPart, error) {
	if apply, err := g.call(u.Ctx, "listparts", id); !apply || err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	up := g.uploads[id]
	if up == nil {
		return nil, status.Error(codes.NotFound, "NoSuchUpload")
	}
	var parts []xfer.MultipartPart
	for n, p := range up.parts {
		parts = append(parts, xfer.MultipartPart{Number: n, ETag: p.etag, Size: int64(len(p.data))})
	}
	slices.SortFunc(parts, func(a, b xfer.MultipartPart) int { return a.Number - b.Number })
	return parts, nil
}

// Complete joins the parts listed, which must be ascending, with the
// ETags the service gave them, each but the last of 5 MiB at least.
func (g *fakeGCS) Complete(u *xfer.Request, id string, parts []xfer.MultipartPart, _ time.Duration) (xfer.Completed, error) {
	apply, err := g.call(u.Ctx, "complete", id)
	if !apply {
		return xfer.Completed{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.completes = append(g.completes, slices.Clone(parts))
	up := g.uploads[id]
	if up == nil {
		return xfer.Completed{}, status.Error(codes.NotFound, "NoSuchUpload")
	}
	if len(parts) == 0 {
		return xfer.Completed{}, status.Error(codes.InvalidArgument, "MalformedXML: no part")
	}
	var total int
	for _, p := range parts {
		total += len(up.parts[p.Number].data)
	}
	data := make([]byte, 0, total)
	for i, p := range parts {
		stored, ok := up.parts[p.Number]
		switch {
		case i > 0 && p.Number <= parts[i-1].Number:
			return xfer.Completed{}, status.Error(codes.InvalidArgument, "InvalidPartOrder")
		case !ok || stored.etag != p.ETag:
			return xfer.Completed{}, status.Errorf(codes.InvalidArgument, "InvalidPart %d", p.Number)
		case i < len(parts)-1 && len(stored.data) < MinMultipartPart:
			return xfer.Completed{}, status.Errorf(codes.InvalidArgument, "EntityTooSmall: part %d", p.Number)
		}
		data = append(data, stored.data...)
	}
	delete(g.uploads, id)
	o := g.storeLocked(up.name, data)
	if err != nil {
		return xfer.Completed{}, err
	}
	return xfer.Completed{Gen: o.Generation, Metagen: 1, CRC32C: o.GetChecksums().GetCrc32C(), HasCRC: true, Size: o.Size}, nil
}

func (g *fakeGCS) Abort(u *xfer.Request, id string, _ time.Duration) error {
	apply, err := g.call(u.Ctx, "abort", id)
	if !apply {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.uploads[id] == nil {
		return status.Error(codes.NotFound, "NoSuchUpload")
	}
	delete(g.uploads, id)
	return err
}

func (g *fakeGCS) ListUploads(u *xfer.Request, from, to time.Time, _ time.Duration) ([]string, error) {
	if apply, err := g.call(u.Ctx, "listuploads", u.Object); !apply || err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for id, up := range g.uploads {
		if up.name == u.Object && !up.started.Before(from) && !up.started.After(to) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
