package capacity

import (
	"math"
	"sync"
	"time"
)

// state is one bucket's capacity: its token bucket, its autoscaling, the
// token buckets of the names written lately, and its counts. Times are
// durations since the Limiter's epoch.
type state struct {
	mu  sync.Mutex
	lim limits

	rate, burst float64 // as autoscaling left them; rate 0: no bucket limit
	tokens      float64
	last        time.Duration // when tokens was last refilled

	saturated bool          // refusing, and not refilled completely since
	since     time.Duration // when the saturation began, or the last autoscaling step
	refused   int64         // refusals for the bucket's rate, for the share of 503

	// The names admitted in the current period and in the one before: a
	// name older than that has a full token bucket again, so it is
	// forgotten with its generation.
	names, old map[string]nameState
	rotated    time.Duration // when names became the current generation

	total   Counts
	tenants map[string]*Counts
}

// nameState is the token bucket of one object name.
type nameState struct {
	tokens float64
	last   time.Duration
}

func newState(lim limits, t time.Duration) *state {
	st := &state{lim: lim, rate: lim.rate, burst: lim.burst, tokens: lim.burst, last: t,
		rotated: t, tenants: make(map[string]*Counts)}
	if lim.objRate > 0 {
		st.names, st.old = make(map[string]nameState), make(map[string]nameState)
	}
	return st
}

// admit decides one write at time t and counts it.
func (st *state) admit(t time.Duration, object, tenant string) Verdict {
	st.mu.Lock()
	defer st.mu.Unlock()
	v := st.decide(t, object)
	c := st.tenants[tenant]
	if c == nil {
		c = new(Counts)
		st.tenants[tenant] = c
	}
	c.add(v)
	st.total.add(v)
	return v
}

// decide checks the name's token bucket, then the bucket's, and takes a
// token of each only if both have one. st.mu is held.
func (st *state) decide(t time.Duration, object string) Verdict {
	var n nameState
	if st.lim.objRate > 0 {
		st.rotate(t)
		n = st.name(t, object)
		if n.tokens < 1 {
			return ObjectRateLimited
		}
	}
	if st.rate > 0 {
		st.refill(t)
		if st.tokens < 1 {
			return st.refuse(t)
		}
		st.tokens--
	}
	if st.lim.objRate > 0 {
		n.tokens--
		st.names[object] = n
	}
	return Admitted
}

// refill adds the tokens earned since the last refill. A bucket found full
// is no longer saturated. st.mu is held.
func (st *state) refill(t time.Duration) {
	if dt := t - st.last; dt > 0 {
		st.tokens = min(st.burst, st.tokens+dt.Seconds()*st.rate)
		st.last = t
	}
	if st.tokens >= st.burst {
		st.saturated = false
	}
}

// refuse turns a write away for the bucket's rate: it steps autoscaling,
// and answers Unavailable for the share of 503. st.mu is held.
func (st *state) refuse(t time.Duration) Verdict {
	if st.lim.after > 0 {
		switch {
		case !st.saturated:
			st.saturated, st.since = true, t
		case t-st.since >= st.lim.after:
			st.grow()
			st.since = t
		}
	}
	st.refused++
	if s := st.lim.share503; s > 0 && math.Floor(float64(st.refused)*s) > math.Floor(float64(st.refused-1)*s) {
		return Unavailable
	}
	return RateLimited
}

// grow is one autoscaling step: the rate, and the burst with it, by the
// factor, up to the cap. st.mu is held.
func (st *state) grow() {
	rate := st.rate * st.lim.factor
	if st.lim.maxRate > 0 {
		rate = min(rate, st.lim.maxRate)
	}
	if rate <= st.rate {
		return
	}
	st.burst = math.Ceil(st.burst * rate / st.rate)
	st.rate = rate
}

// rotate starts a new generation of names once a period has passed since
// the last: the names of the generation before, untouched for at least a
// period, would have full token buckets again, and are forgotten. st.mu is
// held.
func (st *state) rotate(t time.Duration) {
	if t-st.rotated < st.lim.period {
		return
	}
	st.old, st.names = st.names, st.old
	clear(st.names)
	st.rotated = t
}

// name returns the token bucket of object, refilled to time t: a name not
// seen lately has a full one. st.mu is held.
func (st *state) name(t time.Duration, object string) nameState {
	n, ok := st.names[object]
	if !ok {
		n, ok = st.old[object]
	}
	if !ok {
		return nameState{tokens: st.lim.objBurst, last: t}
	}
	if dt := t - n.last; dt > 0 {
		n.tokens = min(st.lim.objBurst, n.tokens+dt.Seconds()*st.lim.objRate)
		n.last = t
	}
	return n
}
