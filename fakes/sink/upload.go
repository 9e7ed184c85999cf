package sink

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// Uploads: the objects being written, their resumable sessions, and
// their finalization, which checks the content and drops it.

// upload is an object being written to the sink: a one-shot write (id
// == ""), which lives as long as its stream, a resumable session, or an
// appendable object (see append.go). It is the engine's writes.Upload.
type upload struct {
	id       string
	sessions *store.Sessions[*upload] // a resumable session's registry
	bucket   string                   // the bare bucket name
	res      *wire.Object             // the spec's resource: the object's name and attributes
	cond     *store.Conditions

	appendable bool
	app        writes.Appendable // appendable: the writer state (see append.go)

	mu           sync.Mutex
	writes.State              // size and checksums; MD5 is nil unless the content is hashed
	result       *wire.Object // set once finalized
	gone         bool         // session dropped after a final failure
}

// newUpload validates a write's spec, counts it against its bucket's
// capacity, and returns an upload for it.
func (k *Server) newUpload(ctx context.Context, spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams) (*upload, error) {
	bucket, err := writes.CheckSpec(spec, common)
	if err != nil {
		return nil, err
	}
	if err := store.CheckBucketName(bucket); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	res := spec.GetResource()
	if err := k.checkZonal(bucket, spec); err != nil {
		return nil, err
	}
	if !spec.GetAppendable() {
		if err := k.unfinalized(bucket, res.GetName()); err != nil {
			return nil, err
		}
	}
	if err := k.admit(ctx, bucket, res.GetName()); err != nil {
		return nil, err
	}
	up := &upload{bucket: bucket, res: res, cond: api.SpecConditions(spec), State: writes.State{Limit: spec.ObjectSize}}
	if k.cfg.md5 {
		up.MD5 = md5.New()
	}
	return up, nil
}

// declare notes the whole-object checksums a message declares, before its
// content is accepted: an MD5 declared before any content starts the
// hashing. up.mu is held.
func (up *upload) declare(sums *wire.ObjectChecksums) error {
	if len(sums.GetMd5Hash()) == 0 || up.MD5 != nil {
		return nil
	}
	if up.Size > 0 {
		return status.Errorf(codes.Unimplemented, "the sink cannot check an MD5 declared after %d bytes of content it did not hash: declare it before the content, or run the sink with MD5 on (sink.WithMD5, gcssink -md5)", up.Size)
	}
	up.MD5 = md5.New()
	return nil
}

// startResumableWrite opens a resumable session.
func (k *Server) startResumableWrite(ctx context.Context, req *wire.StartResumableWriteRequest) (*wire.StartResumableWriteResponse, error) {
	if req.GetWriteObjectSpec().GetAppendable() {
		return nil, status.Error(codes.InvalidArgument, "write_object_spec.appendable: appendable objects are written with BidiWriteObject, not StartResumableWrite")
	}
	up, err := k.newUpload(ctx, req.GetWriteObjectSpec(), req.GetCommonObjectRequestParams())
	if err != nil {
		return nil, err
	}
	if sums := req.GetObjectChecksums(); sums != nil {
		_ = up.declare(sums) // no content yet: cannot fail
		up.Declare(sums)
	}
	up.id, up.sessions = rand.Text(), &k.sessions
	k.sessions.Add(up.id, up)
	k.started.Add(1)
	return &wire.StartResumableWriteResponse{UploadId: up.id}, nil
}

// session returns the resumable session id.
func (k *Server) session(id string) (*upload, error) {
	up, ok := k.sessions.Get(id)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	return up, nil
}

// Lock, Unlock, Written, Session, Appending, Done and Drop implement
// writes.Upload.
func (up *upload) Lock()                  { up.mu.Lock() }
func (up *upload) Unlock()                { up.mu.Unlock() }
func (up *upload) Written() *writes.State { return &up.State }
func (up *upload) Session() string        { return up.id }
func (up *upload) Done() (*wire.Object, bool) {
	return up.result, up.gone
}

func (up *upload) Appending() *writes.Appendable {
	if !up.appendable {
		return nil
	}
	return &up.app
}

// Drop forgets a resumable session after a failure it cannot recover
// from. up.mu is held.
func (up *upload) Drop() {
	if up.id == "" {
		return
	}
	up.gone = true
	up.sessions.Remove(up.id)
}

// queryWriteStatus reports a session's persisted size, or its object once
// finalized.
func (k *Server) queryWriteStatus(_ context.Context, req *wire.QueryWriteStatusRequest) (*wire.QueryWriteStatusResponse, error) {
	up, err := k.session(req.GetUploadId())
	if err != nil {
		return nil, err
	}
	return writes.Query(up)
}

// finalize verifies a complete upload and returns its Object
// (writes.Finalize); the content is already gone. up.mu is held.
func (k *Server) finalize(up *upload) (*wire.Object, error) {
	return writes.Finalize(up, nil, func(sum []byte) (*wire.Object, error) {
		if err := up.cond.CheckVersion(k.current(up.bucket, up.res.GetName())); err != nil {
			return nil, err
		}
		up.result = k.object(up, k.generation(), up.Size, up.CRC, true, sum)
		up.MD5 = nil
		k.keep(up.bucket, up.result, 0)
		k.objects.Add(1)
		k.bytes.Add(up.Size)
		return up.result, nil
	})
}

// generation returns a new generation: the time in microseconds, as GCS,
// made unique and increasing.
func (k *Server) generation() int64 {
	now := time.Now().UnixMicro()
	for {
		last := k.lastGen.Load()
		g := max(now, last+1)
		if k.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}
