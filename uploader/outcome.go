package uploader

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// AfterContext bounds how long a call of the Writer, Upload or UploadMany
// runs once its context ended: what it still does then (finding out whether
// a request whose answer was lost was applied, waiting for gRPC to let go
// of the upload's buffers) takes at most about this long. Work that must go
// on after that, such as deleting a parallel upload's temporary objects,
// runs in the background, bounded, and Client.Close waits for it.
const AfterContext = time.Second

// outcomeGrace is the part of AfterContext that finding out an outcome may
// take once the upload's context ended.
const outcomeGrace = 3 * AfterContext / 4

// clockSkew is how much earlier than the upload's start the service's
// clock may date an object the upload wrote: an object created before
// that is someone else's.
const clockSkew = 2 * time.Second

// answerLost reports whether err, the failure of an attempt that went out,
// leaves open whether the service applied it: the connection failed, the
// attempt's time ran out or the context ended before the answer, or the
// service's own status says it may not know (Internal, Unknown, Aborted).
// A refusal (a precondition, a bad request, pushback) was not applied.
func answerLost(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal, codes.Unknown, codes.Aborted:
		return true
	}
	return false
}

// expect is what an upload wrote, to tell its object from another.
type expect struct {
	size   int64
	crc    uint32
	hasCRC bool
	since  time.Time // the upload's start
}

// ours reports whether o is the object the upload wrote: the same size
// and CRC32C, created since the upload started.
func (e *expect) ours(o *wire.Object) bool {
	if o == nil || o.GetSize() != e.size {
		return false
	}
	if e.hasCRC {
		cs := o.GetChecksums()
		if cs == nil || cs.Crc32C == nil || cs.GetCrc32C() != e.crc {
			return false
		}
	}
	if ct := o.GetCreateTime(); ct != nil && ct.AsTime().Before(e.since.Add(-clockSkew)) {
		return false
	}
	return true
}

// resolve finds out whether an attempt of u whose answer was lost stored
// the object e describes: it first fences u's abandoned attempts (see
// transport.fence), then looks the object up. It returns the object if it
// is u's, and whether the outcome is known: found, or surely absent. Once
// u's context ended, the look-up runs on a context of its own, bounded by
// outcomeGrace.
func (u *upload) resolve(tr transport, e *expect, timeout time.Duration) (o *wire.Object, known bool) {
	ctx := u.ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
		defer cancel()
		timeout = outcomeGrace
	}
	lu := u.detached(ctx)
	lu.via, lu.scratch.open = u.via, u.scratch.open
	fenced := tr.fence(lu, timeout)
	o, err := tr.getObject(lu, u.object, timeout)
	switch {
	case err == nil && e.ours(o):
		return o, true
	case err == nil || status.Code(err) == codes.NotFound:
		return nil, fenced
	}
	return nil, false
}

// settled is the end of a call of an upload that may have stored an
// object although the call failed with err: lost says an attempt's answer
// was lost. It returns the object when the upload's object is stored after
// all, and otherwise err, marked as of unknown outcome (IsOutcomeUnknown)
// unless the object is surely absent.
func (u *upload) settled(tr transport, e *expect, lost bool, timeout time.Duration, err error) (*wire.Object, error) {
	if err == nil || !lost {
		return nil, err
	}
	o, known := u.resolve(tr, e, timeout)
	if o != nil {
		return o, nil
	}
	if !known {
		oe := u.err("", err)
		if oe.Op == "" {
			oe.Op = tr.names().write
		}
		oe.unknown = true
		return nil, oe
	}
	return nil, err
}

// detached returns an upload to the same object in ctx, for calls made
// apart from u's own (a look-up, a cleanup): they share none of u's call
// state, so they may run on another goroutine or after u's call returned.
func (u *upload) detached(ctx context.Context) *upload {
	return &upload{target: target{c: u.c, ctx: ctx, bucket: u.bucket, object: u.object, params: u.params}}
}
