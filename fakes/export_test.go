package fakes

import (
	"context"
	"time"

	"github.com/objup/objup/fakes/internal/core"
)

// SetKeepFinalized lowers the number of finalized sessions a server
// remembers, for a test, and returns a function that restores it.
func SetKeepFinalized(n int) (restore func()) {
	old := core.KeepFinalized
	core.KeepFinalized = n
	return func() { core.KeepFinalized = old }
}

// SetClock makes the server's session registry read the time from now, for
// a test of session expiry.
func SetClock(s *Server, now func() time.Time) {
	s.core.Resumables.SetClock(now)
}

// WithCommitWait makes every write that stores an object call wait with
// its request's context after its commit delay, before it stores the
// object (and before WithDeadlineDrop's check), for a test that orders a
// commit after an event of the request.
func WithCommitWait(wait func(context.Context)) Option {
	return optionFunc(func(c *config) { c.commitWait = wait })
}

// WithCapacityClock makes the buckets' write capacity read the time from
// now, for a test that moves time itself.
func WithCapacityClock(now func() time.Time) Option {
	return optionFunc(func(c *config) { c.capacityClock = now })
}

// DataDir returns the directory of the server's store on disk, "" for a
// store in memory.
func DataDir(s *Server) string {
	if !s.core.Store.OnDisk() {
		return ""
	}
	if s.tmpDir != "" {
		return s.tmpDir
	}
	return s.dataDir
}
