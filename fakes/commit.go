package fakes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Slow commits.
//
// A write that stores an object waits, before it stores it, for a delay
// that [WithCommitDelay] fixes or [WithCommitDelays] draws per write: a
// backend slow to commit. The wait is not cut short by the client's
// leaving: what the service received whole it may commit later, whatever
// the client does next.
//
// What GCS does with a request whose gRPC deadline (grpc-timeout) passed
// before the write was applied is not documented: neither the storage v2
// API reference nor Google's storage-testbench (testbench/grpc_server.py,
// which never reads the call's deadline or time remaining) says that a
// late write is dropped, and gRPC's own definition of DEADLINE_EXCEEDED
// warns that "for operations that change the state of the system, this
// error may be returned even if the operation has completed
// successfully". So by default the fake applies a write whose deadline
// passed, as a backend that commits in its own time may: that is what is
// shown to be possible. [WithDeadlineDrop] models the other behaviour, a
// service that checks the deadline when it applies the write and drops a
// late one, for experiments only: it is assumed, not shown.

// commits draws and waits the commit delay of each write.
type commits struct {
	fixed time.Duration         // WithCommitDelay
	mu    sync.Mutex            // serializes draw
	draw  func() time.Duration  // WithCommitDelays; nil: fixed
	drop  bool                  // WithDeadlineDrop
	wait  func(context.Context) // a test's hook, after the delay (WithCommitWait)
}

// delay returns the commit delay of one write.
func (c *commits) delay() time.Duration {
	if c.draw == nil {
		return c.fixed
	}
	c.mu.Lock()
	d := c.draw()
	c.mu.Unlock()
	if d < 0 {
		panic(fmt.Sprintf("fakes: the commit delay draw returned %v, a negative delay", d))
	}
	return d
}

// commit waits the commit delay of one write that is about to store its
// object, then, with WithDeadlineDrop, refuses it with
// codes.DeadlineExceeded if ctx's deadline passed: the write must then
// store nothing. A ctx that is only cancelled (the client went away) does
// not stop the write. ctx is the request's; nil, or one without a
// deadline (the JSON API's), is never late.
func (c *commits) commit(ctx context.Context) error {
	if d := c.delay(); d > 0 {
		time.Sleep(d) // a slow commit, not cut short by the client's leaving
	}
	if c.wait != nil && ctx != nil {
		c.wait(ctx)
	}
	if !c.drop || ctx == nil {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return status.Errorf(codes.DeadlineExceeded, "the request's deadline passed before the write was applied; nothing was stored (fakes.WithDeadlineDrop)")
	}
	return nil
}

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
// (see the package documentation, Slow commits). Use it for experiments,
// never as the proof that a client is right.
func WithDeadlineDrop() Option {
	return optionFunc(func(c *config) { c.deadlineDrop = true })
}
