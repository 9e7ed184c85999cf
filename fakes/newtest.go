package fakes

import "github.com/objup/objup/fakes/internal/api"

// TB is the part of testing.TB that [NewTest] uses; *testing.T, *testing.B
// and *testing.F satisfy it. fakes takes this interface rather than
// testing.TB so that programs importing fakes do not link the testing
// package.
type TB = api.TB

// NewTest starts a server like [New] and registers its Close with
// tb.Cleanup, reporting an error from Close with tb.Errorf. It stops the test
// with tb.Fatalf if the server cannot start.
func NewTest(tb TB, opts ...Option) *Server {
	tb.Helper()
	return api.StartTest(tb, "fakes.NewTest", func() (*Server, error) { return New(opts...) })
}
