package admit

import (
	"context"
	"sync"
	"time"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader/internal/mono"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// Transport returns tr with its object writes passing stage (nil: none)
// and the tenants' write rates (writes per second of one tenant, in bursts
// of burst; 0: no bound): each attempt waits for its turn in its bucket,
// and its answer teaches the stage the bucket's rate. The data of a
// resumable session (its stream, its status queries) passes freely: the
// session's start was admitted. Its Close closes the stage too.
func Transport(tr xfer.Transport, stage *Stage, writes float64, burst int) xfer.Transport {
	a := admitted{Transport: tr, stage: stage}
	if writes > 0 {
		a.writes = &tenantWrites{rate: rate.Limit(writes), burst: burst}
	}
	return a
}

// Events is what the stage reports of an upload (the Request's
// Lifetime.Ev, when it has these methods): when it started, for its place
// in line, and how long its write waited.
type Events interface {
	Start() mono.Time
	Admitted(d time.Duration)
}

// admitted is Transport's decorator.
type admitted struct {
	xfer.Transport
	stage  *Stage        // nil: no stage
	writes *tenantWrites // per-tenant rates, or nil
}

// tenantWrites bounds each tenant's writes per second.
type tenantWrites struct {
	rate     rate.Limit
	burst    int
	limiters sync.Map // tenant -> *rate.Limiter
}

// wait waits for the tenant's rate.
func (t *tenantWrites) wait(ctx context.Context) error {
	id, _ := header.Tenant(ctx)
	l, ok := t.limiters.Load(id)
	if !ok {
		l, _ = t.limiters.LoadOrStore(id, rate.NewLimiter(t.rate, t.burst))
	}
	if err := l.(*rate.Limiter).Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The wait would outlast the context's deadline.
		return context.DeadlineExceeded
	}
	return nil
}

// wait waits for u's write's turn: the tenant's rate first, then the
// bucket's; its error is the context's, as a request that never left.
func (a admitted) wait(u *xfer.Request) (*Bucket, error) {
	if a.writes != nil {
		if err := a.writes.wait(u.Ctx); err != nil {
			return nil, status.FromContextError(err).Err()
		}
	}
	if a.stage == nil {
		return nil, nil
	}
	b := a.stage.Bucket(u.Bucket)
	var prio int64
	ev, _ := u.Life.Ev.(Events)
	if ev != nil {
		prio = int64(ev.Start())
	}
	d, err := b.Wait(u.Ctx, prio, u.Scratch.Refused)
	if ev != nil && d > 0 {
		ev.Admitted(d)
	}
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return b, nil
}

func (a admitted) WriteObject(u *xfer.Request, rs []*xfer.ChunkRef, timeout time.Duration) (*wire.Object, bool, error) {
	b, err := a.wait(u)
	if err != nil {
		return nil, false, err
	}
	o, sent, err := a.Transport.WriteObject(u, rs, timeout)
	answer(b, err)
	return o, sent, err
}

func (a admitted) StartUpload(u *xfer.Request, timeout time.Duration) (string, error) {
	b, err := a.wait(u)
	if err != nil {
		return "", err
	}
	id, err := a.Transport.StartUpload(u, timeout)
	answer(b, err)
	return id, err
}

func (a admitted) ComposeObject(u *xfer.Request, srcs []xfer.Source, timeout time.Duration) (*wire.Object, error) {
	b, err := a.wait(u)
	if err != nil {
		return nil, err
	}
	o, err := a.Transport.ComposeObject(u, srcs, timeout)
	answer(b, err)
	return o, err
}

func (a admitted) DeleteObject(u *xfer.Request, name string, gen int64, timeout time.Duration) error {
	b, err := a.wait(u)
	if err != nil {
		return err
	}
	err = a.Transport.DeleteObject(u, name, gen, timeout)
	answer(b, err)
	return err
}

func (a admitted) Close() error {
	if a.stage != nil {
		a.stage.Close()
	}
	return a.Transport.Close()
}

// answer tells b, if any, the outcome of a write. (A write the service
// refused for load waits for its turn when it is retried: its caller
// notes the refusal in the request, see xfer.Request.NoteRefusal.)
func answer(b *Bucket, err error) {
	if b == nil {
		return
	}
	b.Answer(outcomeOf(err))
}

// outcomeOf tells the admission stage what an attempt's error says of the
// bucket's load.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case retry.IsNamePushback(err):
		return NamePushback
	case retry.IsPushback(err):
		return Pushback
	}
	return Other
}
