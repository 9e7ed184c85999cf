package uploader

import (
	"context"
	"errors"
	"fmt"

	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/knob"
)

// afterContext bounds how long a call of the Writer, Upload or UploadMany
// runs once its context ended: what it still does then (finding out whether
// a request whose answer was lost was applied, waiting for gRPC to let go
// of the upload's buffers) takes at most about this long. Work that must go
// on after that, such as deleting a parallel upload's temporary objects,
// runs in the background, bounded, and Client.Close waits for it.
const afterContext = knob.AfterContext

// outcomeGrace is the part of afterContext that finding out an outcome may
// take once the upload's context ended.
const outcomeGrace = 3 * afterContext / 4

// creation follows the attempts of a write that creates an object (a
// one-shot write, a compose), whose answer may be lost. No look-up can tell
// whose an object is from its attributes: a generation is the only
// identity the service gives, and a lost answer took it along. So once an
// answer was lost, the outcome is what a later attempt's answer says (a
// success is the object); a later refusal (a precondition that the lost
// attempt's own object may have failed) or failure leaves it unknown (see
// settled).
type creation struct {
	lost bool // an attempt's answer was lost
}

// judge takes an attempt's outcome, o or err, sent saying whether its
// request may have left, and returns it.
func (c *creation) judge(o *wire.Object, sent bool, err error) (*wire.Object, error) {
	if err != nil && sent && retry.AnswerLost(err) {
		c.lost = true
	}
	return o, err
}

// lookup returns the live object under u's name, or nil if there is none
// or the look-up failed, retried as cfg says (it meets the same faults as
// the upload). Once u's context ended it runs on a context of its own,
// bounded by outcomeGrace.
func lookup(u *xfer.Request, tr xfer.Transport, cfg *retry.Config) *wire.Object {
	lu, r, done := settling(u, cfg)
	defer done()
	var o *wire.Object
	err := r.do(&lu.Target, "get", true, nil, func() (string, bool, error) {
		var err error
		o, err = tr.GetObject(lu, u.Object, r.attemptTimeout())
		if status.Code(err) == codes.NotFound {
			o, err = nil, nil
		}
		return "", true, err
	})
	if err != nil {
		return nil
	}
	return o
}

// settling returns an upload detached from u, and its retrier, for a call
// that settles u's outcome: in u's context while it lasts, else in one of
// its own bounded by outcomeGrace, and no attempt of it outlasts that
// context. done releases them.
func settling(u *xfer.Request, cfg *retry.Config) (*xfer.Request, *retrier, func()) {
	ctx, cancel := u.Ctx, context.CancelFunc(func() {})
	if ctx.Err() != nil {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
	}
	lu := u.Detached(ctx)
	ev := newEvents(&lu.Target, nil)
	r := new(retrier)
	r.init(cfg, &ev)
	return lu, r, cancel
}

// settled is the end of a call of a write that creates an object and
// failed with err, after c followed its attempts: err, marked
// IsOutcomeUnknown when an answer was lost: the object may have been
// stored, and may still be (the service may apply a request it read whole
// long after its answer was lost).
func settled(u *xfer.Request, tr xfer.Transport, c *creation, err error) (*wire.Object, error) {
	if err == nil || !c.lost {
		return nil, err
	}
	oe := errOf(&u.Target, tr.Names().Write, err)
	oe.unknown = true
	return nil, oe
}

// finalizedAt is the end of an appendable upload whose finish failed with
// err after its answer may have been lost: the object's generation gen is
// its identity, so the live object is looked up and returned if it is that
// generation, finalized. Otherwise err is returned, marked
// IsOutcomeUnknown: the finish may still be applied.
func (w *Writer) finalizedAt(tr xfer.Transport, gen int64, err error) (*wire.Object, error) {
	if gen != 0 {
		if o := lookup(&w.req, tr, &w.cfg.retry.Config); o.GetGeneration() == gen && o.GetFinalizeTime() != nil {
			return o, nil
		}
	}
	oe := errOf(&w.req.Target, tr.Names().Stream, err)
	oe.unknown = true
	return nil, oe
}

// finished checks the service's object against what was sent. An object
// of another size or CRC32C is a DataLoss error that is also
// IsOutcomeUnknown: the service stored it (it replaced the live object),
// so "nothing was stored" does not hold.
func (w *Writer) finished(o *wire.Object, size int64) error {
	if o == nil {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.Internal, unknown: true, Err: errors.New("the service finished the upload without returning the object")}
	}
	if o.GetSize() != size {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.DataLoss, unknown: true,
			Err: fmt.Errorf("the service stored generation %d of %d bytes, %d were written", o.GetGeneration(), o.GetSize(), size)}
	}
	if cs := o.GetChecksums(); !w.cfg.knob.NoCRC32C && cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != w.ch.CRC32C() {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.DataLoss, unknown: true,
			Err: fmt.Errorf("the service stored generation %d with CRC32C %08x, %08x was written", o.GetGeneration(), cs.GetCrc32C(), w.ch.CRC32C())}
	}
	w.attrs = new(ObjectAttrs)
	w.attrs.setFromObject(o)
	w.cfg.progress.report(size)
	return nil
}
