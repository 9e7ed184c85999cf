package fakes

// ConnStats is one gRPC connection's calls, as [Server.Conns] reports them.
type ConnStats struct {
	// Remote is the client's address.
	Remote string
	// Active counts the calls in flight; Peak the most at once; Calls
	// every call.
	Active, Peak, Calls int64
	// Open says whether the connection is still open.
	Open bool
}

// HTTPConns returns how many TCP connections the JSON API port (and the
// HTTPS one of [WithHTTPSAddr]) has accepted since the server started: a
// client that reuses its connections opens about as many as it has
// requests in flight at once.
func (s *Server) HTTPConns() int64 { return s.httpConns.Load() }

// Conns reports the calls of every gRPC connection the server accepted, in
// the order it accepted them: how many are in flight, the most there were
// at once, and how many there were. It counts only on a server started
// [WithMaxStreams], and is empty on others.
func (s *Server) Conns() []ConnStats {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	out := make([]ConnStats, len(s.conns.all))
	for i, cc := range s.conns.all {
		out[i] = ConnStats{Remote: cc.remote, Active: cc.active.Load(), Peak: cc.peak.Load(), Calls: cc.calls.Load(), Open: !cc.closed.Load()}
	}
	return out
}
