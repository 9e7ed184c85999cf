package fakes

// HTTPConns returns how many TCP connections the JSON API port (and the
// HTTPS one of [WithHTTPSAddr]) has accepted since the server started: a
// client that reuses its connections opens about as many as it has
// requests in flight at once.
func (s *Server) HTTPConns() int64 { return s.httpConns.Load() }

// Conns reports the calls of every gRPC connection the server accepted, in
// the order it accepted them: how many are in flight, the most there were
// at once, and how many there were. It counts only on a server started
// [WithMaxStreams], and is empty on others.
func (s *Server) Conns() []ConnStats { return s.conns.Stats() }
