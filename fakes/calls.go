package fakes

// Calls returns a copy of the request log: the most recent calls that ended
// since the server started or since the last [Server.ResetCalls], at most
// the size set by [WithCallLog], oldest first. A call still running is not
// in it.
func (s *Server) Calls() []Call { return s.calls.Log.Snapshot() }

// CallCounts returns the number of calls that ended since the server started
// or since the last [Server.ResetCalls], per method, tenant and code, sorted
// by method, then tenant, then code. Unlike [Server.Calls] they count every
// call.
func (s *Server) CallCounts() []CallCount { return s.calls.Log.CountAll() }

// ResetCalls empties the request log and zeroes its counters.
func (s *Server) ResetCalls() { s.calls.Log.Reset() }
