package fakes

import (
	"container/list"
	"sync"
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

// sessions is the registry of resumable sessions, of both APIs: by id, in
// the order of their last use, so expiry and the cap cost O(1) per call. It
// also remembers the last keepFinalized finalized sessions, for status
// queries and retried finishes. Sessions expire lazily, when the registry
// is used: no goroutine, no timer per session.
type sessions struct {
	mu        sync.Mutex
	byID      map[string]*list.Element // of *sessionEntry
	lru       list.List                // front: used last
	finalized []string                 // IDs of finalized sessions, oldest first
	expiry    time.Duration
	max       int
	now       func() time.Time
	expired   int64 // sessions that expired or were evicted by the cap
}

type sessionEntry struct {
	up   *upload
	used time.Time
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

func (r *sessions) init(expiry time.Duration, max int) {
	r.byID = make(map[string]*list.Element)
	r.lru.Init()
	r.finalized = nil
	r.expiry, r.max = expiry, max
	if r.now == nil {
		r.now = time.Now
	}
}

// add registers up, a new session, expiring the least recently used one if
// the cap is reached.
func (r *sessions) add(up *upload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sweepLocked(now)
	for len(r.byID) >= r.max {
		r.expireLocked(r.lru.Back())
	}
	r.byID[up.id] = r.lru.PushFront(&sessionEntry{up: up, used: now})
}

// get returns session id, nil if unknown or expired, and marks it used.
func (r *sessions) get(id string) *upload {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sweepLocked(now)
	e := r.byID[id]
	if e == nil {
		return nil
	}
	se := e.Value.(*sessionEntry)
	se.used = now
	r.lru.MoveToFront(e)
	return se.up
}

// remove forgets session id.
func (r *sessions) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.byID[id]; e != nil {
		r.lru.Remove(e)
		delete(r.byID, id)
	}
}

// retire records that session id was finalized, and forgets the oldest
// finalized sessions beyond keepFinalized.
func (r *sessions) retire(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finalized = append(r.finalized, id)
	if n := len(r.finalized) - keepFinalized; n > 0 {
		for _, old := range r.finalized[:n] {
			if e := r.byID[old]; e != nil {
				r.lru.Remove(e)
				delete(r.byID, old)
			}
		}
		r.finalized = append(r.finalized[:0], r.finalized[n:]...)
	}
}

// sweepLocked expires the sessions unused for longer than the expiry.
func (r *sessions) sweepLocked(now time.Time) {
	for e := r.lru.Back(); e != nil && now.Sub(e.Value.(*sessionEntry).used) > r.expiry; e = r.lru.Back() {
		r.expireLocked(e)
	}
}

// expireLocked ends the session of e: it is forgotten, so a later request
// finds no such session, and its data goes with the last request that
// still holds it. (It does not take the session's lock: requests hold that
// one while they call the registry.)
func (r *sessions) expireLocked(e *list.Element) {
	se := e.Value.(*sessionEntry)
	r.lru.Remove(e)
	delete(r.byID, se.up.id)
	r.expired++
}

// stats returns the counts of SessionStats.
func (r *sessions) stats() SessionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(r.now())
	return SessionStats{Open: len(r.byID), Expired: r.expired}
}

// Sessions reports the server's resumable sessions: how many it keeps, and
// how many expired.
func (s *Server) Sessions() SessionStats { return s.sessions.stats() }
