package deadline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/objup/objup/uploader/internal/mono"
)

// Attempt is the context of one attempt of a unary call: the call's context
// with the attempt's deadline. Arm starts an attempt and Disarm ends it; in
// between, Attempt is a context.Context whose Deadline is the earlier of the
// attempt's and the parent's, and whose Done and Err report the attempt's
// deadline as context.DeadlineExceeded and the parent's end as the parent's
// error.
//
// gRPC derives a cancelable child from it; context.WithCancel registers that
// child through AfterFunc, so no goroutine watches it. The timer and the
// registration are the only costs, and the timer is made once per Attempt.
// Deadline reports the attempt's deadline, so gRPC also sends it to the
// server as grpc-timeout.
//
// The zero Attempt is ready to Arm, and must not be copied after first use.
// Only one goroutine (the owner's) arms and disarms it; the timer and the
// context's users read it under a lock, so its context methods are safe for
// concurrent use.
type Attempt struct {
	context.Context // the call's context; its values and cancellation

	mu    sync.Mutex
	at    mono.Time     // the attempt's deadline
	armed bool          // an attempt is running
	fired bool          // the attempt's deadline passed
	done  chan struct{} // made on first Done, closed when fired; nil until then
	f     func()        // what the child registered with AfterFunc
	pstop func() bool   // stops the registration of f on the parent, if any
	timer *time.Timer
	stop  func() bool // a.unregister, made once
}

// arm starts an attempt of at most d on ctx.
func (a *Attempt) Arm(ctx context.Context, d time.Duration) {
	a.mu.Lock()
	a.Context, a.at, a.armed, a.fired, a.f, a.pstop = ctx, mono.Now().Add(d), true, false, nil, nil
	if a.done != nil {
		select {
		case <-a.done: // closed by an earlier attempt
			a.done = nil
		default:
		}
	}
	if a.timer == nil {
		a.stop = a.unregister
		a.timer = time.AfterFunc(d, a.fire)
	} else {
		a.timer.Reset(d)
	}
	a.mu.Unlock()
}

// timedOut reports whether the attempt's own deadline ended it while the
// call's context is still alive.
func (a *Attempt) TimedOut() bool {
	a.mu.Lock()
	fired, parent := a.fired, a.Context
	a.mu.Unlock()
	return fired && parent.Err() == nil
}

// disarm ends the attempt.
func (a *Attempt) Disarm() {
	a.timer.Stop()
	a.mu.Lock()
	a.armed, a.f = false, nil
	if a.pstop != nil {
		a.pstop()
		a.pstop = nil
	}
	a.mu.Unlock()
}

// fire ends the attempt at its deadline: the registered child is cancelled.
func (a *Attempt) fire() {
	a.mu.Lock()
	if !a.armed || a.fired {
		a.mu.Unlock()
		return
	}
	a.fired = true
	f := a.f
	if a.done != nil {
		close(a.done)
	}
	a.mu.Unlock()
	if f != nil {
		f()
	}
}

// Deadline returns the attempt's deadline, or the parent's if earlier.
func (a *Attempt) Deadline() (time.Time, bool) {
	a.mu.Lock()
	at, parent := a.at.Wall(), a.Context
	a.mu.Unlock()
	if d, ok := parent.Deadline(); ok && d.Before(at) {
		return d, true
	}
	return at, true
}

// Done returns a channel closed when the attempt's deadline passed or the
// parent is done.
func (a *Attempt) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
		if a.fired {
			close(a.done)
		}
	}
	if pd := a.Context.Done(); pd != nil && a.pstop == nil && !a.fired {
		a.pstop = context.AfterFunc(a.Context, a.fire)
	}
	return a.done
}

// Err returns the parent's error, or context.DeadlineExceeded once the
// attempt's deadline passed.
func (a *Attempt) Err() error {
	a.mu.Lock()
	fired, parent := a.fired, a.Context
	a.mu.Unlock()
	if err := parent.Err(); err != nil {
		return err
	}
	if fired {
		return context.DeadlineExceeded
	}
	return nil
}

// AfterFunc registers f to run when the attempt ends early (its deadline, or
// the parent's cancellation); context.WithCancel calls it for a child of a.
// The first registration, the one gRPC makes for its child, costs nothing;
// a later one is chained to it, with a stop function of its own.
func (a *Attempt) AfterFunc(f func()) (stop func() bool) {
	a.mu.Lock()
	if a.fired {
		a.mu.Unlock()
		go f() // as context.AfterFunc does for a context already done
		return func() bool { return false }
	}
	if prev := a.f; prev != nil {
		var stopped atomic.Bool
		a.f = func() {
			prev()
			if stopped.CompareAndSwap(false, true) {
				f()
			}
		}
		a.mu.Unlock()
		return func() bool { return stopped.CompareAndSwap(false, true) }
	}
	a.f = f
	if pd := a.Context.Done(); pd != nil && a.pstop == nil {
		a.pstop = context.AfterFunc(a.Context, a.fire)
	}
	a.mu.Unlock()
	return a.stop
}

// unregister is the stop function AfterFunc returns.
func (a *Attempt) unregister() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	had := a.f != nil && !a.fired
	a.f = nil
	return had
}
