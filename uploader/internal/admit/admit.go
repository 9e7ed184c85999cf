// Package admit is the admission stage of a client's object writes, one
// per bucket: it learns from the service's answers the rate at which the
// bucket admits writes, and makes writes wait for their turn instead of
// adding to the load when the service pushes back.
//
// A bucket's stage stays open, at the cost of an atomic load per write and
// a count per success, until the service first pushes back (429,
// RESOURCE_EXHAUSTED, 503). It then admits writes at a learned rate: at
// the first pushback, Beta of the rate at which its writes were answered,
// doubled every CutEvery until the next pushback; at every later one, Beta
// of the rate the service accepted in the last second (this client's share
// of the bucket); in between grown along a cubic curve while writes succeed
// (CUBIC, as TCP and the AWS SDK for Go's adaptive retry mode do), never
// above twice the rate of answers. Several processes sharing a bucket each settle at a share of
// it, without talking to each other, since each cuts what it achieved.
//
// Writes wait as their context allows and never fail for admission. The
// waiting writes are served tenant by tenant in turn (a tenant of weight w
// gets w writes a turn), and within a tenant oldest first (by the priority the caller gives, the upload's start), so
// an upload that lost a few rounds does not starve in backoff while newer
// ones pass. A write that pushback rejected is retried through the same
// stage, so retries cannot multiply the load.
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
	active atomic.Bool // pushback seen: writes wait for their turn
	sent   meter       // writes a second the service answered
	ok     meter       // writes a second the service accepted

	mu      sync.Mutex
	rate    float64   // writes per second admitted
	tokens  float64   // writes that may go now
	refill  time.Time // when tokens were last refilled
	wmax    float64   // the rate at the last cut
	cutAt   time.Time // the last cut
	probing bool      // since the first cut: the rate doubles each CutEvery until the next pushback
	ramping bool      // a ramp and no pushback yet: the rate is the ramp's
	rampAt  time.Time // when the bucket's ramp began
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

// waiter is one write waiting for its turn.
type waiter struct {
	prio    int64
	ch      chan struct{} // closed when granted
	granted bool
	q       *queue
	index   int // in q's heap; -1 once out
}

// queue is one tenant's waiting writes, a min-heap by priority.
type queue struct {
	tenant string
	heap   []*waiter
	inRing bool
	served int // writes granted in the tenant's current turn
}

// Wait returns when a write may go: at once while the bucket's stage is
// open, else at its turn. prio orders a tenant's waiting writes, lowest
// first (the upload's start). It returns how long the write waited, and
// ctx's error if ctx ends first, in which case nothing was taken.
func (b *Bucket) Wait(ctx context.Context, prio int64) (time.Duration, error) {
	if !b.active.Load() {
		return 0, nil
	}
	now := b.s.now()
	b.mu.Lock()
	b.refillLocked(now)
	if len(b.ring) == 0 && b.tokens >= 1 {
		b.tokens--
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
		b.cut(now)
	case NamePushback:
		b.rejections.Add(1)
	}
}

// cut lowers the rate after a pushback, at most once per CutEvery: to Beta
// times the rate at which the service accepted this client's writes in the
// last second (its share of the bucket), or the current rate if lower; the
// first cut, to Beta times the rate at which writes were answered.
func (b *Bucket) cut(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active.Load() && now.Sub(b.cutAt) < CutEvery {
		return
	}
	var base float64
	if b.active.Load() {
		// The bucket's share for this client: what it accepted.
		base = math.Min(b.rate, math.Max(b.ok.rate(now), MinRate))
		b.probing, b.ramping = false, false
	} else {
		// The first pushback: what was answered so far says how fast
		// the client goes (what was accepted may be little, if the bucket
		// refused at once); the rate probes upward until the next one.
		base = math.Max(b.sent.rate(now), MinRate)
		b.refill, b.tokens, b.probing = now, 0, true
	}
	b.wmax, b.cutAt = base, now
	b.rate = math.Max(base*Beta, MinRate)
	b.tokens = math.Min(b.tokens, b.burstLocked())
	b.cuts.Add(1)
	b.active.Store(true)
	b.scheduleLocked()
}

// grow raises the rate: doubling every CutEvery while probing, then along
// CUBIC's curve from the last cut, no higher than twice the rate at which
// writes are answered; a bucket far from pushback for Reopen opens.
func (b *Bucket) grow(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ramping {
		return // the ramp sets the rate until the first pushback
	}
	t := now.Sub(b.cutAt).Seconds()
	var r float64
	if b.probing {
		r = b.wmax * Beta * math.Pow(2, t/CutEvery.Seconds())
	} else {
		k := math.Cbrt(b.wmax * (1 - Beta) / Scale)
		r = Scale*math.Pow(t-k, 3) + b.wmax
	}
	achieved := b.sent.rate(now)
	if !b.probing {
		r = math.Min(r, 2*achieved+MinRate)
	}
	r = math.Max(math.Min(r, b.rampCap(now)), MinRate)
	if r > b.rate {
		b.refillLocked(now)
		b.rate = r
	}
	if now.Sub(b.cutAt) > Reopen && b.rate > 4*achieved && len(b.ring) == 0 && math.IsInf(b.rampCap(now), 1) {
		b.active.Store(false)
	}
}

// rampCap is the most the ramp allows now; +Inf without a ramp.
func (b *Bucket) rampCap(now time.Time) float64 {
	if b.s.rampFrom <= 0 {
		return math.Inf(1)
	}
	return b.s.rampFrom * math.Pow(2, now.Sub(b.rampAt).Seconds()/b.s.rampEvery.Seconds())
}

// burstLocked is how many writes may go at once: a twentieth of a second
// of the rate, at least one.
func (b *Bucket) burstLocked() float64 { return math.Max(1, b.rate/20) }

// refillLocked adds the tokens earned since the last refill.
func (b *Bucket) refillLocked(now time.Time) {
	if b.ramping {
		b.rate = b.rampCap(now)
	}
	if d := now.Sub(b.refill); d > 0 {
		b.tokens = math.Min(b.tokens+d.Seconds()*b.rate, b.burstLocked())
		b.refill = now
	}
}

// grantLocked lets waiting writes go while there are tokens, a tenant at a
// time in turn, each tenant's oldest first, and sets the timer for the
// next turn.
func (b *Bucket) grantLocked(now time.Time) {
	b.refillLocked(now)
	for len(b.ring) > 0 && b.tokens >= 1 {
		if b.next >= len(b.ring) {
			b.next = 0
		}
		q := b.ring[b.next]
		w := q.pop()
		w.granted = true
		close(w.ch)
		b.tokens--
		if q.served++; q.served >= b.s.weightOf(q.tenant) || len(q.heap) == 0 {
			q.served = 0
			b.next++
		}
		b.dropEmptyLocked()
	}
	b.scheduleLocked()
}

// dropEmptyLocked takes the tenants without waiting writes out of the ring.
func (b *Bucket) dropEmptyLocked() {
	kept := b.ring[:0]
	for i, q := range b.ring {
		if len(q.heap) > 0 {
			kept = append(kept, q)
			continue
		}
		q.inRing = false
		if i < b.next {
			b.next--
		}
	}
	clear(b.ring[len(kept):])
	b.ring = kept
}

// scheduleLocked sets the timer for when the next waiting write's token
// is earned.
func (b *Bucket) scheduleLocked() {
	if len(b.ring) == 0 || b.armed {
		return
	}
	d := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	if d < 0 {
		d = 0
	}
	b.armed = true
	if b.timer == nil {
		b.timer = time.AfterFunc(d, b.tick)
	} else {
		b.timer.Reset(d)
	}
}

// tick is the timer: it grants the turns that are due.
func (b *Bucket) tick() {
	b.mu.Lock()
	b.armed = false
	b.grantLocked(b.s.now())
	b.mu.Unlock()
}

func (q *queue) less(i, j int) bool { return q.heap[i].prio < q.heap[j].prio }

func (q *queue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].index, q.heap[j].index = i, j
}

func (q *queue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *queue) down(i int) {
	n := len(q.heap)
	for {
		l, m := 2*i+1, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		q.swap(i, m)
		i = m
	}
}

func (q *queue) push(w *waiter) {
	w.index = len(q.heap)
	q.heap = append(q.heap, w)
	q.up(w.index)
}

func (q *queue) pop() *waiter {
	w := q.heap[0]
	q.remove(w)
	return w
}

func (q *queue) remove(w *waiter) {
	i := w.index
	if i < 0 {
		return
	}
	last := len(q.heap) - 1
	q.swap(i, last)
	q.heap[last] = nil
	q.heap = q.heap[:last]
	w.index = -1
	if i < last {
		q.down(i)
		q.up(i)
	}
}

// meter counts events in slots of a quarter second, without a lock: rate
// is the count of the last four whole slots, the last second.
type meter struct {
	born  atomic.Int64 // UnixNano of the first event
	slots [8]struct {
		slot atomic.Int64
		n    atomic.Int64
	}
}

const slotLen = 250 * time.Millisecond

func (m *meter) add(now time.Time) {
	if m.born.Load() == 0 {
		m.born.CompareAndSwap(0, now.UnixNano())
	}
	k := now.UnixNano() / int64(slotLen)
	s := &m.slots[k&7]
	if old := s.slot.Load(); old != k && s.slot.CompareAndSwap(old, k) {
		s.n.Store(0)
	}
	s.n.Add(1)
}

// rate returns the events per second over the last second (or since the
// first event, if later): the four whole slots before now and the current
// one so far, over at least a fifth of a slot, so a first burst is not
// read as an infinite rate.
func (m *meter) rate(now time.Time) float64 {
	k := now.UnixNano() / int64(slotLen)
	var n int64
	for i := k - 4; i <= k; i++ {
		if s := &m.slots[i&7]; s.slot.Load() == i {
			n += s.n.Load()
		}
	}
	span := 4*slotLen + time.Duration(now.UnixNano()-k*int64(slotLen))
	if born := m.born.Load(); born != 0 {
		span = min(span, time.Duration(now.UnixNano()-born))
	}
	return float64(n) / max(span, slotLen/5).Seconds()
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
