package store

import (
	"container/list"
	"sync"
	"time"
)

// Sessions is the registry of resumable upload sessions, of both APIs: by
// id, in the order of their last use, so expiry and the cap cost O(1) per
// call. It also remembers the last finalized sessions, up to a count the
// caller gives, for status queries and retried finishes. Sessions expire
// lazily, when the registry is used: no goroutine, no timer per session.
// The zero value is not usable: call Init.
type Sessions[T any] struct {
	mu        sync.Mutex
	byID      map[string]*list.Element // of *sessionEntry[T]
	lru       list.List                // front: used last
	finalized []string                 // IDs of finalized sessions, oldest first
	expiry    time.Duration
	max       int
	now       func() time.Time
	expired   int64 // sessions that expired or were evicted by the cap
	forget    func(id string)
}

// OnForget makes the registry call fn with the id of each session it
// forgets (expired, evicted by the cap, removed, or finalized beyond the
// count kept), under its lock.
func (r *Sessions[T]) OnForget(fn func(id string)) {
	r.mu.Lock()
	r.forget = fn
	r.mu.Unlock()
}

func (r *Sessions[T]) forgot(id string) {
	if r.forget != nil {
		r.forget(id)
	}
}

type sessionEntry[T any] struct {
	id   string
	v    T
	used time.Time
}

// Init empties the registry and sets the expiry and the cap (at least 1).
func (r *Sessions[T]) Init(expiry time.Duration, max int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID = make(map[string]*list.Element)
	r.lru.Init()
	r.finalized = nil
	r.expiry, r.max = expiry, max
	if r.now == nil {
		r.now = time.Now
	}
}

// Reset empties the registry and keeps its settings.
func (r *Sessions[T]) Reset() { r.Init(r.expiry, r.max) }

// SetClock makes the registry read the time from now, for a test.
func (r *Sessions[T]) SetClock(now func() time.Time) {
	r.mu.Lock()
	r.now = now
	r.mu.Unlock()
}

// Add registers v as the new session id, expiring the least recently used
// one if the cap is reached.
func (r *Sessions[T]) Add(id string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sweepLocked(now)
	for len(r.byID) >= r.max {
		r.expireLocked(r.lru.Back())
	}
	r.byID[id] = r.lru.PushFront(&sessionEntry[T]{id: id, v: v, used: now})
}

// Get returns session id, false if unknown or expired, and marks it used.
func (r *Sessions[T]) Get(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sweepLocked(now)
	e := r.byID[id]
	if e == nil {
		var zero T
		return zero, false
	}
	se := e.Value.(*sessionEntry[T])
	se.used = now
	r.lru.MoveToFront(e)
	return se.v, true
}

// Remove forgets session id.
func (r *Sessions[T]) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.byID[id]; e != nil {
		r.lru.Remove(e)
		delete(r.byID, id)
		r.forgot(id)
	}
}

// Retire records that session id was finalized, and forgets the oldest
// finalized sessions beyond keep.
func (r *Sessions[T]) Retire(id string, keep int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finalized = append(r.finalized, id)
	if n := len(r.finalized) - keep; n > 0 {
		for _, old := range r.finalized[:n] {
			if e := r.byID[old]; e != nil {
				r.lru.Remove(e)
				delete(r.byID, old)
				r.forgot(old)
			}
		}
		r.finalized = append(r.finalized[:0], r.finalized[n:]...)
	}
}

// sweepLocked expires the sessions unused for longer than the expiry.
func (r *Sessions[T]) sweepLocked(now time.Time) {
	for e := r.lru.Back(); e != nil && now.Sub(e.Value.(*sessionEntry[T]).used) > r.expiry; e = r.lru.Back() {
		r.expireLocked(e)
	}
}

// expireLocked ends the session of e: it is forgotten, so a later request
// finds no such session, and its data goes with the last request that
// still holds it. (It takes no lock of the session's own: requests may
// hold one while they call the registry.)
func (r *Sessions[T]) expireLocked(e *list.Element) {
	se := e.Value.(*sessionEntry[T])
	r.lru.Remove(e)
	delete(r.byID, se.id)
	r.expired++
	r.forgot(se.id)
}

// Stats returns the sessions kept (unfinished ones, and the finalized ones
// still remembered) and the count of sessions that expired or were expired
// early by the cap.
func (r *Sessions[T]) Stats() (open int, expired int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(r.now())
	return len(r.byID), r.expired
}
