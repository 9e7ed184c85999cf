package uploader

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/admit"
)

// admitted is a transport whose object writes pass the client's admission
// stage: each attempt waits for its turn in its bucket, and its answer
// teaches the stage the bucket's rate. The data of a resumable session
// (its stream, its status queries) passes freely: the session's start was
// admitted.
type admitted struct {
	Transport
	stage  *admit.Stage  // nil WithoutAdmission
	writes *tenantWrites // per-tenant rates (TenantLimits.Writes), or nil
}

// tenantWrites bounds each tenant's writes per second.
type tenantWrites struct {
	rate     rate.Limit
	burst    int
	limiters sync.Map // tenant -> *rate.Limiter
}

// wait waits for the tenant's rate.
func (t *tenantWrites) wait(ctx context.Context) error {
	id := tenantOf(ctx)
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
func (a admitted) wait(u *Request) (*admit.Bucket, error) {
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
	if ev := u.Life.Ev; ev != nil {
		prio = int64(ev.Start())
	}
	d, err := b.Wait(u.Ctx, prio, u.Scratch.Refused)
	if ev := u.Life.Ev; ev != nil && d > 0 {
		ev.Admitted(d)
	}
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return b, nil
}

func (a admitted) WriteObject(u *Request, rs []*ChunkRef, timeout time.Duration) (*wire.Object, bool, error) {
	b, err := a.wait(u)
	if err != nil {
		return nil, false, err
	}
	o, sent, err := a.Transport.WriteObject(u, rs, timeout)
	answer(u, b, err)
	return o, sent, err
}

func (a admitted) StartUpload(u *Request, timeout time.Duration) (string, error) {
	b, err := a.wait(u)
	if err != nil {
		return "", err
	}
	id, err := a.Transport.StartUpload(u, timeout)
	answer(u, b, err)
	return id, err
}

func (a admitted) ComposeObject(u *Request, srcs []Source, timeout time.Duration) (*wire.Object, error) {
	b, err := a.wait(u)
	if err != nil {
		return nil, err
	}
	o, err := a.Transport.ComposeObject(u, srcs, timeout)
	answer(u, b, err)
	return o, err
}

func (a admitted) DeleteObject(u *Request, name string, gen int64, timeout time.Duration) error {
	b, err := a.wait(u)
	if err != nil {
		return err
	}
	err = a.Transport.DeleteObject(u, name, gen, timeout)
	answer(u, b, err)
	return err
}

func (a admitted) Close() error {
	if a.stage != nil {
		a.stage.Close()
	}
	return a.Transport.Close()
}

// answer tells b, if any, the outcome of u's write; a write the service
// refused for load waits for its turn when it is retried.
func answer(u *Request, b *admit.Bucket, err error) {
	if b == nil {
		return
	}
	o := outcomeOf(err)
	if o == admit.Pushback || o == admit.NamePushback {
		u.Scratch.Refused = true
	}
	b.Answer(o)
}

// outcomeOf tells the admission stage what an attempt's error says of the
// bucket's load.
func outcomeOf(err error) admit.Outcome {
	switch {
	case err == nil:
		return admit.OK
	case isNamePushback(err):
		return admit.NamePushback
	case isPushback(err):
		return admit.Pushback
	}
	return admit.Other
}

// isPushback reports whether err is the service pushing back for load:
// RESOURCE_EXHAUSTED (HTTP 429), or an HTTP 503 answer. A gRPC
// UNAVAILABLE is not counted: gRPC also reports a broken connection so,
// and the network's faults say nothing of the bucket's load.
func isPushback(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		return true
	case codes.Unavailable:
		s, _ := status.FromError(err)
		return strings.HasPrefix(s.Message(), "HTTP 503")
	}
	return false
}

// isNamePushback reports whether err refuses a write for its object's own
// rate of mutations, as GCS words it ("exceeded the rate limit for object
// mutation operations").
func isNamePushback(err error) bool {
	if status.Code(err) != codes.ResourceExhausted {
		return false
	}
	s, _ := status.FromError(err)
	return strings.Contains(s.Message(), "object mutation")
}
