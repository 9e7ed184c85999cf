package mode

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/knob"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// outcomeGrace is how long finding out an outcome may take once the
// upload's context ended: a part of knob.AfterContext, which bounds what a
// call still does once its context ended.
const outcomeGrace = 3 * knob.AfterContext / 4

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
func lookup(svc Services, u *xfer.Request, tr xfer.Transport, cfg *retry.Config) *wire.Object {
	lu, r, done := settling(svc, u, cfg)
	defer done()
	var o *wire.Object
	err := do(r, &lu.Target, "get", true, nil, func() (string, bool, error) {
		var err error
		o, err = tr.GetObject(lu, u.Object, r.AttemptTimeout())
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

// settling returns an upload detached from u, and its retry engine, for a
// call that settles u's outcome: in u's context while it lasts, else in
// one of its own bounded by outcomeGrace, and no attempt of it outlasts
// that context. done releases them.
func settling(svc Services, u *xfer.Request, cfg *retry.Config) (*xfer.Request, *retry.Engine, func()) {
	ctx, cancel := u.Ctx, context.CancelFunc(func() {})
	if ctx.Err() != nil {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
	}
	lu := u.Detached(ctx)
	r := new(retry.Engine)
	r.Init(cfg, svc.NewEvents(&lu.Target, nil))
	return lu, r, cancel
}

// settled is the end of a call of a write that creates an object and
// failed with err, after c followed its attempts: err, marked unknown when
// an answer was lost: the object may have been stored, and may still be
// (the service may apply a request it read whole long after its answer
// was lost).
func settled(u *xfer.Request, tr xfer.Transport, c *creation, err error) (*wire.Object, error) {
	if err == nil || !c.lost {
		return nil, err
	}
	oe := xfer.Fail(&u.Target, tr.Names().Write, err)
	oe.Unknown = true
	return nil, oe
}
