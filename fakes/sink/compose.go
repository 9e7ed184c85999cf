package sink

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// WithCompose makes the sink keep each object it finalizes as its name,
// generation, size, CRC32C and component count (no content), so that it
// serves ComposeObject and DeleteObject, and checks a write's generation
// preconditions against what it kept: what parallel composite uploads
// need, at the sink's cost. Without it the sink keeps nothing, and those
// calls are unimplemented.
func WithCompose() Option {
	return optionFunc(func(c *config) { c.compose = true })
}

// keptObject is what a sink run WithCompose keeps of an object.
type keptObject struct {
	gen, size  int64
	crc        uint32
	components int32
}

// keptKey is the key of an object in Server.kept.
func keptKey(bucket, name string) string { return bucket + "/" + name }

// current returns the object a write's preconditions are checked against:
// the one kept under that name: whether there is one, its generation and
// metageneration. k.mu is not held.
func (k *Server) current(bucket, name string) (exists bool, gen, meta int64) {
	if !k.cfg.compose {
		return false, 0, 0
	}
	k.mu.Lock()
	o, ok := k.kept[keptKey(bucket, name)]
	k.mu.Unlock()
	return ok, o.gen, 1
}

// keep records a finalized object, when the sink keeps objects.
func (k *Server) keep(bucket string, o *wire.Object, components int32) {
	if !k.cfg.compose {
		return
	}
	k.mu.Lock()
	k.kept[keptKey(bucket, o.GetName())] = keptObject{gen: o.GetGeneration(), size: o.GetSize(), crc: o.GetChecksums().GetCrc32C(), components: components}
	k.mu.Unlock()
}

// composeObject joins 1 to 32 kept objects of the destination's bucket into
// it, as the fake does: each source at its live generation or the one
// named, with its own ifGenerationMatch; the destination's preconditions;
// a CRC32C combined from the sources'; the component counts added up.
func (k *Server) composeObject(ctx context.Context, req *wire.ComposeObjectRequest) (*wire.Object, error) {
	if !k.cfg.compose {
		return nil, status.Error(codes.Unimplemented, "the sink composes only when it keeps objects (sink.WithCompose, gcssink -compose)")
	}
	dst := req.GetDestination()
	bucket, err := api.ParseBucket(dst.GetBucket())
	if err != nil {
		return nil, err
	}
	if err := api.CheckObjectName(dst.GetName()); err != nil {
		return nil, err
	}
	if err := k.admit(ctx, bucket, dst.GetName()); err != nil {
		return nil, err
	}
	srcs := req.GetSourceObjects()
	if n := len(srcs); n == 0 || n > store.MaxComposeSources {
		return nil, status.Errorf(codes.InvalidArgument, "a compose takes 1 to %d source objects, not %d", store.MaxComposeSources, n)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var size int64
	var crc uint32
	var components int32
	for i, s := range srcs {
		o, ok := k.kept[keptKey(bucket, s.GetName())]
		if !ok || (s.GetGeneration() != 0 && s.GetGeneration() != o.gen) {
			return nil, status.Errorf(codes.NotFound, "source object %d, %q, not found", i, s.GetName())
		}
		if p := s.GetObjectPreconditions(); p != nil && p.IfGenerationMatch != nil && *p.IfGenerationMatch != o.gen {
			return nil, status.Errorf(codes.FailedPrecondition, "source object %q: ifGenerationMatch %d, but the generation is %d", s.GetName(), *p.IfGenerationMatch, o.gen)
		}
		crc = crc32c.Combine(crc, o.crc, o.size)
		size += o.size
		components += max(o.components, 1)
	}
	cur, exists := k.kept[keptKey(bucket, dst.GetName())]
	cond := &store.Conditions{GenMatch: req.IfGenerationMatch, MetaMatch: req.IfMetagenerationMatch}
	if err := cond.CheckVersion(exists, cur.gen, 1); err != nil {
		return nil, err
	}
	gen := k.generation()
	ts := timestamppb.Now()
	class := dst.GetStorageClass()
	if class == "" {
		class = store.DefaultStorageClass
	}
	k.kept[keptKey(bucket, dst.GetName())] = keptObject{gen: gen, size: size, crc: crc, components: components}
	k.objects.Add(1)
	return &wire.Object{
		Name:           dst.GetName(),
		Bucket:         api.BucketPrefix + bucket,
		Etag:           api.ObjectETag(gen, 1),
		Generation:     gen,
		Metageneration: 1,
		StorageClass:   class,
		Size:           size,
		ContentType:    dst.GetContentType(),
		Metadata:       dst.GetMetadata(),
		CreateTime:     ts,
		UpdateTime:     ts,
		FinalizeTime:   ts,
		ComponentCount: components,
		Checksums:      &wire.ObjectChecksums{Crc32C: &crc},
	}, nil
}

// deleteObject forgets a kept object: its live generation, or the one
// named.
func (k *Server) deleteObject(ctx context.Context, req *wire.DeleteObjectRequest) (*emptypb.Empty, error) {
	if !k.cfg.compose {
		return nil, status.Error(codes.Unimplemented, "the sink deletes only when it keeps objects (sink.WithCompose, gcssink -compose)")
	}
	bucket, err := api.ParseBucket(req.GetBucket())
	if err != nil {
		return nil, err
	}
	if err := k.admit(ctx, bucket, req.GetObject()); err != nil {
		return nil, err
	}
	key := keptKey(bucket, req.GetObject())
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.kept[key]
	if !ok || (req.GetGeneration() != 0 && req.GetGeneration() != o.gen) {
		return nil, status.Errorf(codes.NotFound, "object %q not found", req.GetObject())
	}
	delete(k.kept, key)
	return new(emptypb.Empty), nil
}
