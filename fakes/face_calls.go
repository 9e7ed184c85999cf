package fakes

import (
	"slices"
	"strings"
)

// Calls returns a copy of the request log: the most recent calls that ended
// since the server started or since the last [Server.ResetCalls], at most
// the size set by [WithCallLog], oldest first. A call still running is not
// in it.
func (s *Server) Calls() []Call {
	l := &s.calls
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.size || l.size == 0 {
		return slices.Clone(l.ring)
	}
	i := l.n % l.size
	return append(slices.Clone(l.ring[i:]), l.ring[:i]...)
}

// CallCounts returns the number of calls that ended since the server started
// or since the last [Server.ResetCalls], per method, tenant and code, sorted
// by method, then tenant, then code. Unlike [Server.Calls] they count every
// call.
func (s *Server) CallCounts() []CallCount {
	l := &s.calls
	l.mu.Lock()
	out := make([]CallCount, 0, len(l.counts))
	for k, n := range l.counts {
		out = append(out, CallCount{Method: k.method, Tenant: k.tenant, Code: k.code, Count: n})
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b CallCount) int {
		if c := strings.Compare(a.Method, b.Method); c != 0 {
			return c
		}
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return int(a.Code) - int(b.Code)
	})
	return out
}

// ResetCalls empties the request log and zeroes its counters.
func (s *Server) ResetCalls() {
	l := &s.calls
	l.mu.Lock()
	clear(l.ring)
	l.ring = l.ring[:0]
	l.n = 0
	clear(l.counts)
	l.mu.Unlock()
}
