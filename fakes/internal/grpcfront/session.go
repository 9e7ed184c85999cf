package grpcfront

import (
	"context"

	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
)

// session returns the resumable session id, and notes its bucket and
// object in the call's log record.
func (s *Server) Session(ctx context.Context, id string) (*core.Upload, error) {
	up, err := s.LookupSession(id)
	if err != nil {
		return nil, err
	}
	calls.NoteTarget(ctx, up.Bucket.Name(), up.Object)
	return up, nil
}
