package fakes

import (
	"time"
)

// Session defaults: GCS expires a resumable session a week after it was
// started; the fake also caps how many it keeps open.
const (
	DefaultSessionExpiry = 7 * 24 * time.Hour
	DefaultMaxSessions   = 100_000
)

// WithSessionExpiry sets how long a resumable session (gRPC or JSON) lives
// after its last use before it expires, as GCS expires one a week after it
// started (DefaultSessionExpiry). An expired session answers as an unknown
// one: NotFound over gRPC, 404 over JSON. d must be positive.
func WithSessionExpiry(d time.Duration) Option {
	return optionFunc(func(c *config) { c.sessionExpiry = d })
}

// WithMaxSessions caps the resumable sessions the server keeps open
// (DefaultMaxSessions by default): when a new session would pass the cap,
// the one unused for the longest expires at once, as it would soonest
// anyway. So abandoned sessions never take more memory than the cap's. n
// must be at least 1.
func WithMaxSessions(n int) Option {
	return optionFunc(func(c *config) { c.maxSessions = n })
}

// SessionStats counts the server's resumable sessions.
type SessionStats struct {
	// Open counts the sessions kept: unfinished ones, and the finalized
	// ones the server still remembers.
	Open int `json:"open"`
	// Expired counts the sessions that expired, or were expired early by
	// the cap (WithMaxSessions).
	Expired int64 `json:"expired"`
}

// Sessions reports the server's resumable sessions: how many it keeps, and
// how many expired.
func (s *Server) Sessions() SessionStats {
	open, expired := s.core.Resumables.Stats()
	return SessionStats{Open: open, Expired: expired}
}
