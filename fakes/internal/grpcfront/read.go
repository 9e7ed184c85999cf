package grpcfront

import (
	"context"
	"hash/crc32"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// objectRef validates a bucket resource name and object name, records them
// for the call, and returns the bucket.
func (s *Server) objectRef(ctx context.Context, bucketRes, name string) (*store.Bucket, error) {
	bucket, err := api.ParseBucket(bucketRes)
	if err != nil {
		return nil, err
	}
	calls.NoteTarget(ctx, bucket, name)
	if err := api.CheckObjectName(name); err != nil {
		return nil, err
	}
	return s.Store.Bucket(bucket)
}

// ReadObject streams an object's content, or a range of it, in messages of at
// most 2 MiB, each with its CRC32C. The first message also carries the
// object's metadata, its checksums and the content range. A message whose
// bytes lie in one stored part is sent from the store without a copy.
func (v *Service) ReadObject(req *wire.ReadObjectRequest, stream grpc.ServerStreamingServer[wire.ReadObjectResponse]) error {
	s := v.S
	ctx := stream.Context()
	b, err := s.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return err
	}
	if err := api.CheckCommon(req.GetCommonObjectRequestParams()); err != nil {
		return err
	}
	obj, err := b.Get(req.GetObject(), req.GetGeneration())
	if err != nil {
		return err
	}
	cond := api.ReadConditions(req.IfGenerationMatch, req.IfGenerationNotMatch, req.IfMetagenerationMatch, req.IfMetagenerationNotMatch)
	if err := cond.Check(obj); err != nil {
		return err
	}

	size := obj.Size()
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
	meta := core.ToObject(b, obj)
	msg := &wire.ReadObjectResponse{
		Metadata:        meta,
		ObjectChecksums: meta.Checksums,
		ContentRange:    &wire.ContentRange{Start: start, End: end, CompleteLength: size},
	}
	if start == end {
		return stream.Send(msg)
	}

	var buf []byte // for messages that span stored parts
	data := &wire.ChecksummedData{}
	for off := start; off < end; {
		n := min(core.MaxChunk, end-off)
		c := obj.Part(off, n)
		if c == nil {
			if buf == nil {
				p := core.ReadBufs.Get().(*[]byte)
				defer core.ReadBufs.Put(p)
				buf = *p
			}
			c = buf[:n]
			obj.Read(c, off)
		}
		crc := crc32.Checksum(c, crc32c.Table)
		data.Content, data.Crc32C = c, &crc
		msg.ChecksummedData = data
		if err := stream.Send(msg); err != nil {
			return err
		}
		off += n
		if msg.Metadata != nil {
			msg = &wire.ReadObjectResponse{}
		}
	}
	return nil
}

// GetObject returns an object's metadata.
func (v *Service) GetObject(ctx context.Context, req *wire.GetObjectRequest) (*wire.Object, error) {
	b, err := v.S.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return nil, err
	}
	if req.GetSoftDeleted() || req.GetRestoreToken() != "" {
		return nil, status.Error(codes.Unimplemented, "soft-deleted objects are not supported by the fake")
	}
	obj, err := b.Get(req.GetObject(), req.GetGeneration())
	if err != nil {
		return nil, err
	}
	cond := api.ReadConditions(req.IfGenerationMatch, req.IfGenerationNotMatch, req.IfMetagenerationMatch, req.IfMetagenerationNotMatch)
	if err := cond.Check(obj); err != nil {
		return nil, err
	}
	return core.ToObject(b, obj), nil
}

// DeleteObject deletes the live object, or the given generation, checking
// its preconditions atomically with the delete.
func (v *Service) DeleteObject(ctx context.Context, req *wire.DeleteObjectRequest) (*emptypb.Empty, error) {
	b, err := v.S.objectRef(ctx, req.GetBucket(), req.GetObject())
	if err != nil {
		return nil, err
	}
	if err := v.S.admitGRPC(ctx, b.Name(), req.GetObject()); err != nil {
		return nil, err
	}
	cond := api.ReadConditions(req.IfGenerationMatch, req.IfGenerationNotMatch, req.IfMetagenerationMatch, req.IfMetagenerationNotMatch)
	if err := b.Remove(req.GetObject(), req.GetGeneration(), cond); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// ListObjects lists a bucket's objects in name order, with prefix,
// delimiter (prefixes count towards the page size like objects),
// include_trailing_delimiter, lexicographic_start/end, versions and
// pagination. match_glob, filter and soft_deleted are not supported.
func (v *Service) ListObjects(ctx context.Context, req *wire.ListObjectsRequest) (*wire.ListObjectsResponse, error) {
	bucket, err := api.ParseBucket(req.GetParent())
	if err != nil {
		return nil, err
	}
	calls.NoteTarget(ctx, bucket, "")
	if req.GetMatchGlob() != "" || req.GetFilter() != "" || req.GetSoftDeleted() {
		return nil, status.Error(codes.Unimplemented, "match_glob, filter and soft_deleted are not supported by the fake")
	}
	pageSize := int(req.GetPageSize())
	switch {
	case pageSize < 0:
		return nil, status.Errorf(codes.InvalidArgument, "page_size is %d", pageSize)
	case pageSize == 0:
		pageSize = core.DefaultPageSize
	case pageSize > core.MaxPageSize:
		pageSize = core.MaxPageSize
	}
	b, err := v.S.Store.Bucket(bucket)
	if err != nil {
		return nil, err
	}
	page, err := b.List(&store.ListQuery{
		Prefix:                   req.GetPrefix(),
		Delimiter:                req.GetDelimiter(),
		StartOffset:              req.GetLexicographicStart(),
		EndOffset:                req.GetLexicographicEnd(),
		IncludeTrailingDelimiter: req.GetIncludeTrailingDelimiter(),
		Versions:                 req.GetVersions(),
		PageSize:                 pageSize,
		Token:                    req.GetPageToken(),
	})
	if err != nil {
		return nil, err
	}
	resp := &wire.ListObjectsResponse{Prefixes: page.Prefixes, NextPageToken: page.Next}
	resp.Objects = make([]*wire.Object, len(page.Objects))
	for i, o := range page.Objects {
		resp.Objects[i] = core.ToObject(b, o)
	}
	return resp, nil
}
