package core

import (
	"context"
	"fmt"
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
type Commits struct {
	Fixed time.Duration         // WithCommitDelay
	mu    sync.Mutex            // serializes draw
	Draw  func() time.Duration  // WithCommitDelays; nil: fixed
	Drop  bool                  // WithDeadlineDrop
	Wait  func(context.Context) // a test's hook, after the delay (WithCommitWait)
}

// delay returns the commit delay of one write.
func (c *Commits) delay() time.Duration {
	if c.Draw == nil {
		return c.Fixed
	}
	c.mu.Lock()
	d := c.Draw()
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
func (c *Commits) Commit(ctx context.Context) error {
	if d := c.delay(); d > 0 {
		time.Sleep(d) // a slow commit, not cut short by the client's leaving
	}
	if c.Wait != nil && ctx != nil {
		c.Wait(ctx)
	}
	if !c.Drop || ctx == nil {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return status.Errorf(codes.DeadlineExceeded, "the request's deadline passed before the write was applied; nothing was stored (fakes.WithDeadlineDrop)")
	}
	return nil
}
