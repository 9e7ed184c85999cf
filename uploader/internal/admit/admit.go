package admit

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what became of an admitted write.
type Outcome int

const (
	// OK: the service accepted the write.
	OK Outcome = iota
	// Pushback: the service refused the write for the bucket's load
	// (429, RESOURCE_EXHAUSTED, 503): the rate is cut.
	Pushback
	// NamePushback: the service refused the write for its object's own
	// rate (about one write a second per name): the bucket's rate is left
	// alone.
	NamePushback
	// Other: any other failure; it says nothing of the bucket's load.
	Other
)

// Defaults of the rate's control.
const (
	// Beta is the share of the achieved rate a pushback cuts to.
	Beta = 0.85
	// Scale is CUBIC's constant C, for rates in writes per second.
	Scale = 0.4
	// MinRate is the least rate, in writes per second.
	MinRate = 1.0
	// CutEvery spaces the cuts: the pushbacks of writes already sent at
	// the old rate cut once.
	CutEvery = 250 * time.Millisecond
	// Reopen is how long a bucket must go without pushback, its learned
	// rate far above what succeeds, before its stage opens again.
	Reopen = time.Minute
)

// Stage holds the admission of every bucket a client writes to. It is safe
// for concurrent use.
type Stage struct {
	now      func() time.Time
	tenantOf func(context.Context) string
	weight   func(tenant string) int
	buckets  sync.Map // name -> *Bucket

	// A ramp (see Ramp): each bucket starts at rampFrom writes a second
	// and at most doubles every rampEvery.
	rampFrom  float64
	rampEvery time.Duration
}

// Ramp makes every bucket the stage sees from now on start at from writes
// a second, and its rate at most double every every, whatever the
// service's answers (GCS asks for about 1,000 writes a second to a new
// bucket, doubling no faster than every 20 minutes). Pushback still cuts
// the rate below the ramp. Call it before the first write.
func (s *Stage) Ramp(from float64, every time.Duration) {
	s.rampFrom, s.rampEvery = from, every
}

// New returns a stage. tenantOf reads the tenant of a write's context (nil:
// every write is of one tenant); weight gives a tenant's weight, the
// writes it gets per turn (nil, or less than 1: one); now is the clock
// (nil: time.Now).
func New(tenantOf func(context.Context) string, weight func(string) int, now func() time.Time) *Stage {
	if now == nil {
		now = time.Now
	}
	if tenantOf == nil {
		tenantOf = func(context.Context) string { return "" }
	}
	return &Stage{now: now, tenantOf: tenantOf, weight: weight}
}

// weightOf returns tenant's weight, at least 1.
func (s *Stage) weightOf(tenant string) int {
	if s.weight == nil {
		return 1
	}
	return max(1, s.weight(tenant))
}

// Bucket returns the admission of bucket name, made on first use.
func (s *Stage) Bucket(name string) *Bucket {
	if b, ok := s.buckets.Load(name); ok {
		return b.(*Bucket)
	}
	nb := &Bucket{s: s, name: name, tenants: map[string]*queue{}}
	if s.rampFrom > 0 {
		now := s.now()
		nb.rampAt, nb.ramping = now, true
		nb.rate, nb.wmax, nb.cutAt, nb.refill = s.rampFrom, s.rampFrom, now, now
		nb.tokens = nb.burstLocked()
		nb.active.Store(true)
	}
	b, _ := s.buckets.LoadOrStore(name, nb)
	return b.(*Bucket)
}

// Each calls f for every bucket the stage has seen.
func (s *Stage) Each(f func(*Bucket)) {
	s.buckets.Range(func(_, b any) bool {
		f(b.(*Bucket))
		return true
	})
}

// Bucket is the admission of one bucket.
type Bucket struct {
	s      *Stage
	name   string
	active atomic.Bool  // pushback seen: writes wait for their turn
	sent   meter        // writes a second the service answered
	ok     meter        // writes a second the service accepted
	pushed meter        // writes a second the service refused for load
	flying atomic.Int64 // writes admitted and not answered yet

	mu      sync.Mutex
	onGrant func(tenant string, prio int64) // tests: told of each grant, in order, under mu
	rate    float64                         // writes per second admitted
	tokens  float64                         // writes that may go now
	refill  time.Time                       // when tokens were last refilled
	wmax    float64                         // the rate at the last cut
	cutAt   time.Time                       // the last cut
	probing bool                            // since the first cut: the rate doubles each CutEvery until the next pushback
	ramping bool                            // a ramp and no pushback yet: the rate is the ramp's
	rampAt  time.Time                       // when the bucket's ramp began
	tenants map[string]*queue
	ring    []*queue // the tenants with waiting writes, in turn
	next    int      // the ring's next turn
	timer   *time.Timer
	armed   bool // the timer is set

	waits, rejections, cuts atomic.Int64
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Stats are a bucket's admission figures.
type Stats struct {
	Active     bool    // writes wait for their turn
	Rate       float64 // the learned rate, writes per second (0 while open)
	Waits      int64   // writes that waited for their turn
	Rejections int64   // pushbacks reported
	Cuts       int64   // cuts of the rate
}

// Stats returns the bucket's figures.
func (b *Bucket) Stats() Stats {
	st := Stats{Active: b.active.Load(), Waits: b.waits.Load(), Rejections: b.rejections.Load(), Cuts: b.cuts.Load()}
	if st.Active {
		b.mu.Lock()
		st.Rate = b.rate
		b.mu.Unlock()
	}
	return st
}

// Wait returns when a write may go: at once while the bucket's stage is
// open, else at its turn. prio orders a tenant's waiting writes, lowest
// first (the upload's start). It returns how long the write waited, and
// ctx's error if ctx ends first, in which case nothing was taken. Every
// write Wait lets go must be answered (Answer).
//
// A write that the service has not refused (retry false) and that finds
// none of the client's writes to the bucket in flight or waiting goes at
// once, turn or not, while the service refuses few of the client's writes
// (LoneRefusals): a client that writes one object at a time waits for
// each answer, so it cannot multiply the load, and pacing it would leave
// a quiet client sharing a bucket with busy ones a sliver of it. A retry
// of a refused write always waits for its turn, and so does every write
// while a ramp (Stage.Ramp) sets the rate.
func (b *Bucket) Wait(ctx context.Context, prio int64, retry bool) (time.Duration, error) {
	if !b.active.Load() {
		b.flying.Add(1)
		return 0, nil
	}
	now := b.s.now()
	b.mu.Lock()
	b.refillLocked(now)
	if len(b.ring) == 0 && (b.tokens >= 1 || !retry && b.lone(now)) {
		b.tokens = math.Max(b.tokens-1, 0)
		b.flying.Add(1)
		b.mu.Unlock()
		return 0, nil
	}
	tenant := b.s.tenantOf(ctx)
	q := b.tenants[tenant]
	if q == nil {
		q = &queue{tenant: tenant}
		b.tenants[tenant] = q
	}
	w := &waiter{prio: prio, ch: make(chan struct{}), q: q}
	q.push(w)
	if !q.inRing {
		q.inRing = true
		b.ring = append(b.ring, q)
	}
	b.scheduleLocked()
	b.mu.Unlock()
	b.waits.Add(1)
	select {
	case <-w.ch:
		b.flying.Add(1)
		return b.s.now().Sub(now), nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if w.granted {
		b.tokens++ // its turn came as it left: the next one takes it
		b.grantLocked(b.s.now())
	} else {
		q.remove(w)
		b.dropEmptyLocked()
	}
	b.mu.Unlock()
	return b.s.now().Sub(now), ctx.Err()
}

// Answer reports the outcome of an admitted write.
func (b *Bucket) Answer(o Outcome) {
	b.flying.Add(-1)
	now := b.s.now()
	b.sent.add(now)
	switch o {
	case OK:
		b.ok.add(now)
		if b.active.Load() {
			b.grow(now)
		}
	case Pushback:
		b.rejections.Add(1)
		b.pushed.add(now)
		b.cut(now)
	case NamePushback:
		b.rejections.Add(1)
	}
}

// LoneRefusals is the share of a bucket's writes the service may have
// refused in the last second for a lone write to go at once (see Wait).
const LoneRefusals = 0.05

// lone reports whether a write goes at once although no turn is free: it
// finds none of the client's writes in flight, no ramp sets the rate, and
// the service refused few of the client's writes in the last second (a
// client alone on a bucket that runs it into the limit one write at a time
// is paced as any other). b.mu is held.
func (b *Bucket) lone(now time.Time) bool {
	return !b.ramping && b.flying.Load() == 0 && b.pushed.rate(now) <= LoneRefusals*b.sent.rate(now)
}

// Close stops the bucket's timer. Waiting writes are left to their
// contexts.
func (b *Bucket) Close() {
	b.mu.Lock()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
}

// Close stops every bucket's timer.
func (s *Stage) Close() { s.Each((*Bucket).Close) }
