package fakes

import (
	"context"
	"encoding/base64"
	"hash/crc32"

	"github.com/objup/objup/internal/crc32c"
	"io"
	"strings"
	"sync"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/internal/wire"
)

// readBufs holds maxChunk buffers for ReadObject. grpc-go marshals a message
// before SendMsg returns, so a buffer is free again once Send returned.
var readBufs = sync.Pool{New: func() any { b := make([]byte, maxChunk); return &b }}

// smallRead is the size up to which ReadObject allocates an exact buffer
// rather than taking a pooled maxChunk one.
const smallRead = 64 << 10

// objectRef validates a bucket resource name and object name, records them
// for the call, and checks the bucket exists.
func (s *Server) objectRef(ctx context.Context, bucketRes, name string) (string, error) {
	bucket, err := parseBucket(bucketRes)
	if err != nil {
		return "", err
	}
	noteTarget(ctx, bucket, name)
	if err := checkObjectName(name); err != nil {
		return "", err
	}
	return s.checkBucket(bucketRes)
}

// ReadObject streams an object's content, or a range of it, in messages of at
// most 2 MiB, each with its CRC32C. The first message also carries the
// object's metadata, its checksums and the content range.
func (v *service) ReadObject(req *wire.ReadObjectRequest, stream grpc.ServerStreamingServer[wire.ReadObjectResponse]) error {
	s := v.s
	ctx := stream.Context()
	bucket, err := s.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return err
	}
	if err := checkCommon(req.GetCommonObjectRequestParams()); err != nil {
		return err
	}
	obj, err := s.lookup(bucket, req.GetObject(), req.GetGeneration())
	if err != nil {
		return err
	}
	defer obj.Close()
	pre := preconditions{
		genMatch: req.IfGenerationMatch, genNotMatch: req.IfGenerationNotMatch,
		metaMatch: req.IfMetagenerationMatch, metaNotMatch: req.IfMetagenerationNotMatch,
	}
	if err := pre.check(obj.Generation); err != nil {
		return err
	}

	size := obj.Size
	start, limit := req.GetReadOffset(), req.GetReadLimit()
	switch {
	case limit < 0:
		return status.Errorf(codes.InvalidArgument, "read_limit is %d", limit)
	case start < 0:
		start = max(0, size+start)
	case start > size:
		return status.Errorf(codes.OutOfRange, "read_offset %d is beyond the object's %d bytes", start, size)
	}
	end := size
	if limit > 0 && limit < size-start {
		end = start + limit
	}
	meta := toObject(&obj.ObjectAttrs)
	msg := &wire.ReadObjectResponse{
		Metadata:        meta,
		ObjectChecksums: meta.Checksums,
		ContentRange:    &wire.ContentRange{Start: start, End: end, CompleteLength: size},
	}
	if start == end {
		return stream.Send(msg)
	}
	if start > 0 {
		if _, err := obj.Content.Seek(start, io.SeekStart); err != nil {
			return status.Errorf(codes.Internal, "seek: %v", err)
		}
	}

	var buf []byte
	if end-start <= smallRead {
		buf = make([]byte, end-start)
	} else {
		p := readBufs.Get().(*[]byte)
		defer readBufs.Put(p)
		buf = *p
	}
	data := &wire.ChecksummedData{}
	for off := start; off < end; {
		b := buf[:min(int64(len(buf)), end-off)]
		if _, err := io.ReadFull(obj.Content, b); err != nil {
			return status.Errorf(codes.Internal, "reading object content: %v", err)
		}
		crc := crc32.Checksum(b, crc32c.Table)
		data.Content, data.Crc32C = b, &crc
		msg.ChecksummedData = data
		if err := stream.Send(msg); err != nil {
			return err
		}
		off += int64(len(b))
		if off == end {
			break
		}
		if msg.Metadata != nil {
			msg = &wire.ReadObjectResponse{}
		}
	}
	return nil
}

// GetObject returns an object's metadata.
func (v *service) GetObject(ctx context.Context, req *wire.GetObjectRequest) (*wire.Object, error) {
	s := v.s
	bucket, err := s.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return nil, err
	}
	if req.GetSoftDeleted() || req.GetRestoreToken() != "" {
		return nil, status.Error(codes.Unimplemented, "soft-deleted objects are not supported by the fake")
	}
	obj, err := s.lookup(bucket, req.GetObject(), req.GetGeneration())
	if err != nil {
		return nil, err
	}
	obj.Close()
	pre := preconditions{
		genMatch: req.IfGenerationMatch, genNotMatch: req.IfGenerationNotMatch,
		metaMatch: req.IfMetagenerationMatch, metaNotMatch: req.IfMetagenerationNotMatch,
	}
	if err := pre.check(obj.Generation); err != nil {
		return nil, err
	}
	return toObject(&obj.ObjectAttrs), nil
}

// DeleteObject deletes the live object, or the given generation. Its
// preconditions are checked just before the delete, not atomically with it.
func (v *service) DeleteObject(ctx context.Context, req *wire.DeleteObjectRequest) (*emptypb.Empty, error) {
	s := v.s
	bucket, err := s.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return nil, err
	}
	obj, err := s.lookup(bucket, req.GetObject(), req.GetGeneration())
	if err != nil {
		return nil, err
	}
	obj.Close()
	pre := preconditions{
		genMatch: req.IfGenerationMatch, genNotMatch: req.IfGenerationNotMatch,
		metaMatch: req.IfMetagenerationMatch, metaNotMatch: req.IfMetagenerationNotMatch,
	}
	if err := pre.check(obj.Generation); err != nil {
		return nil, err
	}
	be := s.fs.Backend()
	if req.GetGeneration() != 0 {
		err = be.DeleteObjectWithGeneration(bucket, req.GetObject(), req.GetGeneration())
	} else {
		err = be.DeleteObject(bucket, req.GetObject())
	}
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "object %q not found in bucket %q", req.GetObject(), bucket)
	}
	return &emptypb.Empty{}, nil
}

const (
	defaultPageSize = 1000
	maxPageSize     = 1000
)

// ListObjects lists a bucket's objects in name order, with prefix,
// delimiter (prefixes count towards the page size like objects),
// include_trailing_delimiter, lexicographic_start/end, versions and
// pagination. match_glob, filter and soft_deleted are not supported.
func (v *service) ListObjects(ctx context.Context, req *wire.ListObjectsRequest) (*wire.ListObjectsResponse, error) {
	s := v.s
	bucket, err := parseBucket(req.GetParent())
	if err != nil {
		return nil, err
	}
	noteTarget(ctx, bucket, "")
	if req.GetMatchGlob() != "" || req.GetFilter() != "" || req.GetSoftDeleted() {
		return nil, status.Error(codes.Unimplemented, "match_glob, filter and soft_deleted are not supported by the fake")
	}
	pageSize := int(req.GetPageSize())
	switch {
	case pageSize < 0:
		return nil, status.Errorf(codes.InvalidArgument, "page_size is %d", pageSize)
	case pageSize == 0:
		pageSize = defaultPageSize
	case pageSize > maxPageSize:
		pageSize = maxPageSize
	}
	after := ""
	if t := req.GetPageToken(); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil || len(b) == 0 {
			return nil, status.Errorf(codes.InvalidArgument, "page_token %q is not one this server issued", t)
		}
		after = string(b)
	}
	if _, err := s.checkBucket(req.GetParent()); err != nil {
		return nil, err
	}
	listed, err := s.fs.ListObjectsWithOptionsPaginated(bucket, fakestorage.ListOptions{Prefix: req.GetPrefix(), Versions: req.GetVersions()})
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "bucket %q not found", bucket)
	}

	prefix, delim := req.GetPrefix(), req.GetDelimiter()
	lo, hi := req.GetLexicographicStart(), req.GetLexicographicEnd()
	resp := &wire.ListObjectsResponse{}
	entries, last := 0, ""
	for i := range listed.Objects {
		a := &listed.Objects[i]
		// key is the entry the object belongs to: itself, or the prefix
		// that rolls it up. Pages resume after the last key returned.
		key, rolled := a.Name, false
		if delim != "" {
			if j := strings.Index(a.Name[len(prefix):], delim); j >= 0 {
				key, rolled = a.Name[:len(prefix)+j+len(delim)], true
			}
		}
		if key <= after && after != "" || lo != "" && a.Name < lo || hi != "" && a.Name >= hi {
			continue
		}
		if key != last {
			if entries == pageSize {
				resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(last))
				break
			}
			entries++
			last = key
			if rolled {
				resp.Prefixes = append(resp.Prefixes, key)
			}
		}
		if !rolled || req.GetIncludeTrailingDelimiter() && a.Name == key {
			resp.Objects = append(resp.Objects, toObject(a))
		}
	}
	return resp, nil
}
