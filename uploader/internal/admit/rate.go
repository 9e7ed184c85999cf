package admit

import (
	"math"
	"sync/atomic"
	"time"
)

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
