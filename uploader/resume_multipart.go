package uploader

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/xfer"
)

// xmlAPIName is Handle.API of a multipart upload: any client may continue
// it.
const xmlAPIName = "xml"

// resumeMultipart continues a multipart upload: the parts the service
// holds with the ETag the handle noted, whose bytes the source still has,
// are reused, the others sent again, and the upload is completed. An
// upload the service no longer knows is done when the handle says its
// complete went out and the live object holds the source's bytes, else a
// NotFound error.
func (w *Writer) resumeMultipart(h *Handle, src io.ReaderAt) (*ObjectAttrs, error) {
	const op = "Resume"
	c := w.client()
	ctx := w.req.Ctx
	fail := func(err error) (*ObjectAttrs, error) {
		w.fail(op, err)
		w.closed = true
		w.end()
		return nil, w.err
	}
	xml, err := c.multipart()
	if err != nil {
		return fail(invalid(op, h.Bucket, h.Object, "%w", err))
	}
	for _, p := range h.Parts {
		if p.ETag == "" {
			continue
		}
		crc, n, err := checksumRange(src, p.Offset, p.Size)
		switch {
		case err != nil:
			return fail(invalid(op, h.Bucket, h.Object, "reading the source: %w", err))
		case n != p.Size || crc != p.CRC32C:
			return fail(sourceChanged(op, h, "part %d, %d bytes from offset %d, has CRC32C %08x in the handle, %08x in the source", p.Index+1, p.Size, p.Offset, p.CRC32C, crc))
		}
	}
	held, err := c.listParts(ctx, xml, h)
	if CodeOf(err) == codes.NotFound && h.Composing {
		if attrs, ok := c.completedEarlier(ctx, w, h, src); ok {
			return attrs, nil
		}
	}
	if err != nil {
		return fail(err)
	}
	var reuse []xfer.StoredPart
	for _, p := range h.Parts {
		if hp, ok := held[p.Index+1]; ok && p.ETag != "" && hp.ETag == p.ETag && hp.Size == p.Size {
			reuse = append(reuse, xfer.StoredPart{Index: p.Index, Offset: p.Offset, Size: p.Size, CRC32C: p.CRC32C, ETag: p.ETag})
		}
	}
	if err := w.takeSpec(op, h); err != nil {
		return fail(err)
	}
	parts := 0
	if w.cfg.parallel != nil {
		parts = w.cfg.parallel.Parts
	}
	w.cfg.parallel = &mode.Parallel{PartSize: h.PartSize, Parts: parts, XML: xml, UploadID: h.UploadID, Stored: reuse, Method: int(ViaMultipart)}
	attrs, err := w.finishFrom(src, 0)
	if err != nil && h.Composing && CodeOf(err) == codes.NotFound {
		// The complete that went out before was applied meanwhile.
		if a, ok := c.completedEarlier(ctx, nil, h, src); ok {
			return a, nil
		}
	}
	return attrs, err
}

// listParts returns the parts the service holds of h's upload, by number.
func (c *Client) listParts(ctx context.Context, xml xfer.Multipart, h *Handle) (map[int]xfer.MultipartPart, error) {
	u, r := c.call(ctx, h.Bucket, h.Object)
	var parts []xfer.MultipartPart
	op, err := r.Do(ctx, xfer.MultipartNames.List, true, nil, func() (string, bool, error) {
		var err error
		parts, err = xml.ListParts(u, h.UploadID, r.AttemptTimeout())
		return "", true, err
	})
	if err != nil {
		return nil, newError(op, h.Bucket, h.Object, err)
	}
	m := make(map[int]xfer.MultipartPart, len(parts))
	for _, p := range parts {
		m[p.Number] = p
	}
	return m, nil
}

// completedEarlier returns the object of h's upload if its complete went
// out before and the live object holds the source's bytes; it ends w, if
// given, and removes the journal's entry then.
func (c *Client) completedEarlier(ctx context.Context, w *Writer, h *Handle, src io.ReaderAt) (*ObjectAttrs, bool) {
	o, err := c.getObject(ctx, h.Bucket, h.Object)
	if err != nil {
		return nil, false
	}
	attrs, err := finishedAlready("Resume", h, o, src)
	if err != nil {
		return nil, false
	}
	if w != nil {
		if j := w.cfg.journal(); j != nil {
			_ = j.Remove(h.Bucket, h.Object)
		}
		w.closed = true
		w.end()
	}
	return attrs, true
}

// abortMultipart abandons h's multipart upload; one the service no longer
// knows is fine.
func (c *Client) abortMultipart(ctx context.Context, h *Handle) error {
	xml, err := c.multipart()
	if err != nil {
		return invalid("Discard", h.Bucket, h.Object, "%w", err)
	}
	u, r := c.call(ctx, h.Bucket, h.Object)
	op, err := r.Do(ctx, xfer.MultipartNames.Abort, true, nil, func() (string, bool, error) {
		err := xml.Abort(u, h.UploadID, r.AttemptTimeout())
		if CodeOf(err) == codes.NotFound {
			err = nil
		}
		return "", true, err
	})
	if err != nil {
		return newError(op, h.Bucket, h.Object, err)
	}
	return nil
}

// checkMultipartHandle checks what a multipart handle needs.
func checkMultipartHandle(h *Handle) error {
	switch {
	case h.UploadID == "" || h.PartSize < mode.MinMultipartPart:
		return fmt.Errorf("multipart handle without its upload id, or with parts of %d bytes", h.PartSize)
	case h.API != xmlAPIName:
		return fmt.Errorf("multipart handle of the %q API, want %q", h.API, xmlAPIName)
	}
	return nil
}
