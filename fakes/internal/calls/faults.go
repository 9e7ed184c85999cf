package calls

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
type Faults struct {
	Armed atomic.Bool
	Stop  chan struct{} // closed by Server.Close: delays end at once

	mu      sync.Mutex
	fail    []*failRule
	brk     map[string][]BreakRule
	corrupt map[string]int
	delay   map[string]time.Duration
	lose    map[string]int
	redir   []RedirectRule
}

type RedirectRule struct {
	After int64
	Token string
}

type failRule struct {
	method string
	nth    int
	seen   int
	code   codes.Code
}

type BreakRule struct {
	After int64
	Code  codes.Code
}

func (f *Faults) lock() {
	f.mu.Lock()
	if f.brk == nil {
		f.brk = make(map[string][]BreakRule)
		f.corrupt = make(map[string]int)
		f.delay = make(map[string]time.Duration)
		f.lose = make(map[string]int)
	}
}

func MustCode(op string, code codes.Code) {
	if code == codes.OK {
		panic(fmt.Sprintf("fakes: %s: code must not be OK", op))
	}
}

// takeRedirect returns the RedirectAppend rule for a new appendable
// write stream, if any.
func (f *Faults) TakeRedirect() (RedirectRule, bool) {
	if !f.Armed.Load() {
		return RedirectRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.redir) == 0 {
		return RedirectRule{}, false
	}
	r := f.redir[0]
	f.redir = f.redir[1:]
	return r, true
}

// lost returns the error that replaces the answer of a finished write of
// method, if a LoseAnswer rule takes it, else nil.
func (f *Faults) Lost(method string) error {
	if !f.Armed.Load() {
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
func (f *Faults) Before(ctx context.Context, method string) error {
	if !f.Armed.Load() {
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
		case <-f.Stop:
			t.Stop()
			return status.Error(codes.Unavailable, "fakes: server closing")
		}
	}
	return err
}

// takeBreak returns the BreakStream rule for a new stream of method, if any.
func (f *Faults) TakeBreak(method string) (BreakRule, bool) {
	if !f.Armed.Load() {
		return BreakRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.brk[method]
	if len(q) == 0 {
		return BreakRule{}, false
	}
	r := q[0]
	f.brk[method] = q[1:]
	return r, true
}

// takeCorrupt reports whether the data message at hand must be corrupted.
func (f *Faults) TakeCorrupt(method string) bool {
	if !f.Armed.Load() {
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

// addFail adds a FailCall rule.
func (f *Faults) AddFail(method string, nth int, code codes.Code) {
	f.lock()
	f.fail = append(f.fail, &failRule{method: method, nth: nth, code: code})
	f.Armed.Store(true)
	f.mu.Unlock()
}

// addBreak adds a BreakStream rule.
func (f *Faults) AddBreak(method string, afterBytes int64, code codes.Code) {
	f.lock()
	f.brk[method] = append(f.brk[method], BreakRule{After: afterBytes, Code: code})
	f.Armed.Store(true)
	f.mu.Unlock()
}

// addCorrupt adds a CorruptNext rule.
func (f *Faults) AddCorrupt(method string) {
	f.lock()
	f.corrupt[method]++
	f.Armed.Store(true)
	f.mu.Unlock()
}

// setDelay sets (d > 0) or removes (d == 0) the Delay rule of method.
func (f *Faults) SetDelay(method string, d time.Duration) {
	f.lock()
	if d == 0 {
		delete(f.delay, method)
	} else {
		f.delay[method] = d
		f.Armed.Store(true)
	}
	f.mu.Unlock()
}

// addLose adds a LoseAnswer rule.
func (f *Faults) AddLose(method string) {
	f.lock()
	f.lose[method]++
	f.Armed.Store(true)
	f.mu.Unlock()
}

// addRedirect adds a RedirectAppend rule.
func (f *Faults) AddRedirect(afterBytes int64, token string) {
	f.lock()
	f.redir = append(f.redir, RedirectRule{After: afterBytes, Token: token})
	f.Armed.Store(true)
	f.mu.Unlock()
}

// clear removes every rule.
func (f *Faults) Clear() {
	f.mu.Lock()
	f.Armed.Store(false)
	f.fail, f.brk, f.corrupt, f.delay, f.lose, f.redir = nil, nil, nil, nil, nil, nil
	f.mu.Unlock()
}
