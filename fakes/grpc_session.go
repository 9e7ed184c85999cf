package fakes

import "context"

// session returns the resumable session id, and notes its bucket and
// object in the call's log record.
func (s *Server) Session(ctx context.Context, id string) (*Upload, error) {
	up, err := s.LookupSession(id)
	if err != nil {
		return nil, err
	}
	NoteTarget(ctx, up.Bucket.Name(), up.Object)
	return up, nil
}
