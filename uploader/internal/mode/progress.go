package mode

import "sync/atomic"

// Progress calls a WithProgress function with the bytes the
// service acknowledged, from whichever goroutine learns of them (a
// stream's receiver, a part's goroutine, the Writer's), never under one of
// objup's locks and never two calls at once: a goroutine that finds a call
// running leaves its value for the running one to report, so no one
// waits. Values only grow; a value already reported is not reported again.
type Progress struct {
	f       func(int64)
	latest  atomic.Int64 // the highest value learnt
	running atomic.Bool  // a call of f runs
	done    int64        // the highest value reported; its owner holds running
}

// NewProgress returns a reporter for f, or nil if f is nil.
func NewProgress(f func(int64)) *Progress {
	if f == nil {
		return nil
	}
	r := &Progress{f: f, done: -1}
	r.latest.Store(-1) // an empty object's 0 is reported too
	return r
}

// Report learns of n and reports it, unless a call running reports it.
// A nil reporter does nothing.
func (r *Progress) Report(n int64) {
	if r == nil {
		return
	}
	for {
		cur := r.latest.Load()
		if n <= cur || r.latest.CompareAndSwap(cur, n) {
			break
		}
	}
	for r.running.CompareAndSwap(false, true) {
		if v := r.latest.Load(); v > r.done {
			r.done = v
			r.f(v)
		}
		done := r.done
		r.running.Store(false)
		if r.latest.Load() <= done {
			return
		}
	}
}
