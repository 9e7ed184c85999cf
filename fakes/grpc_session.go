package fakes

import "context"

// session returns the resumable session id, and notes its bucket and
// object in the call's log record.
func (s *Server) session(ctx context.Context, id string) (*upload, error) {
	up, err := s.lookupSession(id)
	if err != nil {
		return nil, err
	}
	noteTarget(ctx, up.b.Name(), up.object)
	return up, nil
}
