package fakes

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// WithCommitDelays makes every write that stores an object wait a delay
// that draw returns, drawn once per write, before it stores the object, as
// a backend whose commits take a varying time does; it replaces
// [WithCommitDelay]. The writes that wait are those that store an object:
// a one-shot WriteObject or BidiWriteObject, the finish_write of a
// resumable session (gRPC) and the last request of a JSON resumable
// upload, JSON media and multipart uploads, compose (both APIs), copy and
// the last call of a rewrite (both APIs), and the finish_write that
// finalizes an appendable object. The object is stored even if the client
// went away in the meantime (see [WithDeadlineDrop] for the deadline).
//
// The server calls draw from many goroutines, one call at a time, so draw
// need not be safe for concurrent use; the delays follow the order in
// which writes reach their commit. draw must not return a negative delay
// (the server panics); a nil draw means no delay. [CommitJitter] makes a
// draw from a seeded source.
func WithCommitDelays(draw func() time.Duration) Option {
	return optionFunc(func(c *config) { c.commitDraw, c.commitDelay = draw, 0 })
}

// CommitJitter returns a draw for [WithCommitDelays]: delays uniform in
// [lo, hi], from a pseudo-random source seeded with seed, so that a seed
// gives the same sequence of delays on every run (which write gets which
// delay still follows the order in which writes commit). It panics if lo
// is negative or hi is less than lo. The draw is not safe for concurrent
// use on its own; the server serializes its calls.
func CommitJitter(lo, hi time.Duration, seed uint64) func() time.Duration {
	if lo < 0 || hi < lo {
		panic(fmt.Sprintf("fakes: CommitJitter(%v, %v): need 0 <= lo <= hi", lo, hi))
	}
	r := rand.New(rand.NewPCG(seed, 0x6f626a7570)) // "objup"
	span := uint64(hi - lo)
	return func() time.Duration {
		if span == 0 {
			return lo
		}
		return lo + time.Duration(r.Uint64N(span+1))
	}
}

// WithDeadlineDrop makes a gRPC write whose deadline (the grpc-timeout
// its client sent) passed before it stored its object fail with
// codes.DeadlineExceeded and store nothing, as a service that checks the
// deadline when it applies a write would. It is checked after the commit
// delay, just before the object is stored, on every write that
// [WithCommitDelays] names, over gRPC only (a JSON API request carries no
// deadline). A client that was cancelled rather than timed out does not
// stop the write.
//
// This behaviour is assumed, not shown: GCS does not document dropping a
// late write, and the default, applying it, is the conservative model
// (see docs/fake/commits.md). Use it for experiments,
// never as the proof that a client is right.
func WithDeadlineDrop() Option {
	return optionFunc(func(c *config) { c.deadlineDrop = true })
}
