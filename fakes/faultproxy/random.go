package faultproxy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// An Option configures a Proxy in New.
type Option interface {
	apply(*config)
}

type config struct {
	seed   int64
	random Random
	held   Held // WithHeld
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Random describes the faults a proxy injects at random, on top of those
// given to Inject. The zero value injects none.
type Random struct {
	// MeanBytes is the mean number of bytes between two faults in one
	// direction of one connection: the offset of each direction's next
	// fault is drawn from an exponential distribution of this mean, when
	// the connection opens and again after each random fault. 0 injects no
	// random faults.
	MeanBytes int64
	// Weights are the relative weights of Reset, Cut and Stall, indexed by
	// Kind. The zero value weighs the three equally.
	Weights [3]int
	// StallMin and StallMax bound the duration of a random stall, drawn
	// uniformly in [StallMin, StallMax]; a StallMax below StallMin counts
	// as StallMin. One of them must be positive when MeanBytes is and
	// stalls have a weight.
	StallMin, StallMax time.Duration
	// Held are the relative weights of Drop and Deliver, indexed by
	// [Held]: each connection draws, when it opens, what becomes of the
	// bytes the proxy holds from a sender that resets (see [WithHeld]).
	// The draw comes from a source of its own, derived from the seed and
	// the connection's rank, so it leaves the faults' offsets as they
	// are without it. The zero value draws nothing: every connection
	// follows WithHeld.
	Held [2]int
	// DropMin and DropMax bound the interval between two calls of DropAll,
	// drawn uniformly in [DropMin, DropMax]; a DropMax below DropMin counts
	// as DropMin. A DropMin of 0 never drops.
	DropMin, DropMax time.Duration
}

// WithRandom injects faults at random as r describes, drawn from a
// pseudo-random source seeded with seed. Each connection draws from its
// own source, derived from seed and the connection's rank (first accepted,
// second, ...), so a run that opens its connections in the same order and
// sends the same bytes on each meets the same faults at the same offsets,
// whatever the timing. The intervals of DropAll are drawn from a source of
// their own; which bytes a drop interrupts depends on timing.
//
// New panics if r is invalid: a negative field, or random stalls with no
// duration.
func WithRandom(seed int64, r Random) Option {
	return optionFunc(func(c *config) {
		c.seed = seed
		c.random = r
	})
}

// WithHeld sets what becomes of the bytes the proxy holds from a sender
// that resets its socket, on every connection ([Random].Held aside): Drop,
// the default, or Deliver. New panics if h is neither.
func WithHeld(h Held) Option {
	return optionFunc(func(c *config) { c.held = h })
}

// held draws what becomes of a connection's held bytes, or returns def
// when r draws nothing.
func (r *Random) held(rng *rand.Rand, def Held) Held {
	if r.Held[Drop]+r.Held[Deliver] == 0 {
		return def
	}
	if rng.IntN(r.Held[Drop]+r.Held[Deliver]) < r.Held[Drop] {
		return Drop
	}
	return Deliver
}

// check panics if r is not valid, and returns it with its defaults set.
func (r Random) check() Random {
	if r.MeanBytes < 0 || r.StallMin < 0 || r.StallMax < 0 || r.DropMin < 0 || r.DropMax < 0 {
		panic(fmt.Sprintf("faultproxy: negative field in %+v", r))
	}
	sum := 0
	for _, w := range r.Weights {
		if w < 0 {
			panic(fmt.Sprintf("faultproxy: negative weight in %v", r.Weights))
		}
		sum += w
	}
	if sum == 0 {
		r.Weights = [3]int{1, 1, 1}
	}
	if r.Held[Drop] < 0 || r.Held[Deliver] < 0 {
		panic(fmt.Sprintf("faultproxy: negative weight in Held %v", r.Held))
	}
	r.StallMax = max(r.StallMax, r.StallMin)
	r.DropMax = max(r.DropMax, r.DropMin)
	if r.MeanBytes > 0 && r.Weights[Stall] > 0 && r.StallMax <= 0 {
		panic("faultproxy: random stalls need a positive StallMax")
	}
	return r
}

// next returns the offset of the next random fault of a direction, or -1
// for none.
func (r *Random) next(rng *rand.Rand) int64 {
	if r.MeanBytes <= 0 {
		return -1
	}
	// At least 1: a fault at every offset 0 would never let a byte pass.
	return int64(math.Ceil(rng.ExpFloat64() * float64(r.MeanBytes)))
}

// fault draws a random fault of direction d.
func (r *Random) fault(rng *rand.Rand, d Direction) Fault {
	x := rng.IntN(r.Weights[0] + r.Weights[1] + r.Weights[2])
	k := Reset
	for x >= r.Weights[k] {
		x -= r.Weights[k]
		k++
	}
	f := Fault{Kind: k, Dir: d}
	if k == Stall {
		f.Stall = r.StallMin + time.Duration(rng.Int64N(int64(r.StallMax-r.StallMin)+1))
	}
	return f
}

// interval draws the time until the next random DropAll.
func (r *Random) interval(rng *rand.Rand) time.Duration {
	return r.DropMin + time.Duration(rng.Int64N(int64(r.DropMax-r.DropMin)+1))
}
