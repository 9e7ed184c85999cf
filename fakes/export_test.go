package fakes

import "time"

// SetKeepFinalized lowers the number of finalized sessions a server
// remembers, for a test, and returns a function that restores it.
func SetKeepFinalized(n int) (restore func()) {
	old := keepFinalized
	keepFinalized = n
	return func() { keepFinalized = old }
}

// SetClock makes the server's session registry read the time from now, for
// a test of session expiry.
func SetClock(s *Server, now func() time.Time) {
	s.sessions.SetClock(now)
}

// WithCapacityClock makes the buckets' write capacity read the time from
// now, for a test that moves time itself.
func WithCapacityClock(now func() time.Time) Option {
	return optionFunc(func(c *config) { c.capacityClock = now })
}
