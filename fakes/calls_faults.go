package fakes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// faults holds a server's fault rules. A server with no rules pays one atomic
// load per call.
type faults struct {
	armed atomic.Bool
	stop  chan struct{} // closed by Server.Close: delays end at once

	mu      sync.Mutex
	fail    []*failRule
	brk     map[string][]breakRule
	corrupt map[string]int
	delay   map[string]time.Duration
	lose    map[string]int
	redir   []redirectRule
}

type redirectRule struct {
	after int64
	token string
}

type failRule struct {
	method string
	nth    int
	seen   int
	code   codes.Code
}

type breakRule struct {
	after int64
	code  codes.Code
}

func (f *faults) lock() {
	f.mu.Lock()
	if f.brk == nil {
		f.brk = make(map[string][]breakRule)
		f.corrupt = make(map[string]int)
		f.delay = make(map[string]time.Duration)
		f.lose = make(map[string]int)
	}
}

func mustCode(op string, code codes.Code) {
	if code == codes.OK {
		panic(fmt.Sprintf("fakes: %s: code must not be OK", op))
	}
}

// takeRedirect returns the RedirectAppend rule for a new appendable
// write stream, if any.
func (f *faults) takeRedirect() (redirectRule, bool) {
	if !f.armed.Load() {
		return redirectRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.redir) == 0 {
		return redirectRule{}, false
	}
	r := f.redir[0]
	f.redir = f.redir[1:]
	return r, true
}

// lost returns the error that replaces the answer of a finished write of
// method, if a LoseAnswer rule takes it, else nil.
func (f *faults) lost(method string) error {
	if !f.armed.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose[method] == 0 {
		return nil
	}
	f.lose[method]--
	return status.Errorf(codes.Unavailable, "fakes: the answer of %s was lost (the object is stored)", method)
}

// before runs the call-level rules for a new call of method: the delay, then
// the count of FailCall rules. It returns the error the call must fail with,
// or nil.
func (f *faults) before(ctx context.Context, method string) error {
	if !f.armed.Load() {
		return nil
	}
	var err error
	f.mu.Lock()
	d := f.delay[method]
	kept := f.fail[:0]
	for _, r := range f.fail {
		if r.method == method {
			r.seen++
			if r.seen == r.nth {
				if err == nil {
					err = status.Errorf(r.code, "fakes: injected failure of call %d of %s", r.nth, method)
				}
				continue
			}
		}
		kept = append(kept, r)
	}
	clear(f.fail[len(kept):])
	f.fail = kept
	f.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-f.stop:
			t.Stop()
			return status.Error(codes.Unavailable, "fakes: server closing")
		}
	}
	return err
}

// takeBreak returns the BreakStream rule for a new stream of method, if any.
func (f *faults) takeBreak(method string) (breakRule, bool) {
	if !f.armed.Load() {
		return breakRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.brk[method]
	if len(q) == 0 {
		return breakRule{}, false
	}
	r := q[0]
	f.brk[method] = q[1:]
	return r, true
}

// takeCorrupt reports whether the data message at hand must be corrupted.
func (f *faults) takeCorrupt(method string) bool {
	if !f.armed.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.corrupt[method] == 0 {
		return false
	}
	f.corrupt[method]--
	return true
}
