package uploader

import (
	"context"
	"errors"
	"fmt"
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
	gen    int64     // an appendable object's generation, else 0
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
	if e.gen != 0 {
		// An appendable object: its generation, finalized.
		return o.GetGeneration() == e.gen && o.GetFinalizeTime() != nil
	}
	if ct := o.GetCreateTime(); ct != nil && ct.AsTime().Before(e.since.Add(-clockSkew)) {
		return false
	}
	return true
}

// creation follows the attempts of a write that creates an object (a
// one-shot write, a parallel upload's part, a compose), whose answer may be
// lost: once one was, a precondition failure of a later attempt may have
// met that attempt's own object, which is then looked up (see resolve).
type creation struct {
	lost bool // an attempt's answer was lost
}

// expecter describes the object a write creates, when it is needed.
type expecter interface{ expect() *expect }

// judge takes an attempt's outcome, o or err, sent saying whether its
// request may have left. It returns the object and no error when the
// attempt, or an earlier one whose answer was lost, stored it; otherwise
// what it was given.
func (c *creation) judge(u *upload, tr transport, want expecter, cfg *retryConfig, o *wire.Object, sent bool, err error) (*wire.Object, error) {
	switch {
	case err == nil:
	case c.lost && IsPreconditionFailed(err):
		if stored := u.resolve(tr, want.expect(), cfg); stored != nil {
			return stored, nil
		}
	case sent && answerLost(err):
		c.lost = true
	}
	return o, err
}

// resolve finds out whether an attempt of u whose answer was lost stored
// the object e describes, and returns the object if so. It first fences
// u's abandoned attempts (see transport.fence), so that one stuck behind a
// stalled path cannot land long after, then looks the object up, retried
// as cfg says (the look-up meets the same faults as the upload). Once u's
// context ended, both run on a context of their own, bounded by
// outcomeGrace.
func (u *upload) resolve(tr transport, e *expect, cfg *retryConfig) *wire.Object {
	ctx := u.ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
		defer cancel()
	}
	lu := u.detached(ctx)
	lu.via, lu.scratch.open = u.via, u.scratch.open
	ev := newEvents(&lu.target, nil)
	var r retrier
	r.init(cfg, &ev)
	timeout := func() time.Duration {
		d := r.attemptTimeout()
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		return d
	}
	tr.fence(lu, timeout())
	var o *wire.Object
	err := r.do(&lu.target, "get", true, nil, func() (string, bool, error) {
		var err error
		o, err = tr.getObject(lu, u.object, timeout())
		if status.Code(err) == codes.NotFound {
			o, err = nil, nil
		}
		return "", true, err
	})
	if err == nil && e.ours(o) {
		return o
	}
	return nil
}

// settled is the end of a call of an upload that failed with err: lost
// says that an attempt went out whole, or may have, and its answer was
// lost, so the service may have stored the object anyway, or may still
// store it (a commit in progress when the answer was lost). It returns the
// object when the upload's object is found stored; otherwise err, marked
// IsOutcomeUnknown when an answer was lost: an object not found may still
// be on its way, and only the service knows.
func (u *upload) settled(tr transport, e *expect, lost bool, cfg *retryConfig, err error) (*wire.Object, error) {
	if err == nil || !lost {
		return nil, err
	}
	if o := u.resolve(tr, e, cfg); o != nil {
		return o, nil
	}
	oe := u.err(tr.names().write, err)
	oe.unknown = true
	return nil, oe
}

// detached returns an upload to the same object in ctx, for calls made
// apart from u's own (a look-up, a cleanup): they share none of u's call
// state, so they may run on another goroutine or after u's call returned.
func (u *upload) detached(ctx context.Context) *upload {
	return &upload{target: target{c: u.c, ctx: ctx, bucket: u.bucket, object: u.object, params: u.params}}
}

// finished checks the service's object against what was sent.
func (w *Writer) finished(o *wire.Object, size int64) error {
	if o == nil {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.Internal, Err: errors.New("the service finished the upload without returning the object")}
	}
	if o.GetSize() != size {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service stored %d bytes, %d were written", o.GetSize(), size)}
	}
	if cs := o.GetChecksums(); !w.cfg.noCRC32C && cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != w.ch.CRC32C() {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service reports CRC32C %08x, %08x was written", cs.GetCrc32C(), w.ch.CRC32C())}
	}
	w.attrs = new(ObjectAttrs)
	w.attrs.setFromObject(o)
	w.cfg.progress.report(size)
	return nil
}
