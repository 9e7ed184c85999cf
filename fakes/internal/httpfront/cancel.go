package httpfront

import (
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// kindCancelled is the JSON API's answer to a request to a cancelled
// session: 499.
var kindCancelled = store.Kind{Code: codes.Canceled, HTTP: 499, Reason: "clientClosedRequest"}

// cancelUpload serves DELETE on a session URI: the session ends, nothing
// is stored, and GCS's answer is 499, as it is for a session already
// cancelled or finalized (which keeps its object); an unknown session, or
// one that ended in a failure, is 404.
func (s *Server) cancelUpload(w http.ResponseWriter, id string) error {
	up, err := s.JSONSession(id)
	if err != nil {
		return err
	}
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if up.Gone && !up.Cancelled {
		return store.Errorf(store.KindNotFound, "no such upload session %q", id)
	}
	s.CancelSession(up)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(499)
	return nil
}

// errSessionGone is the JSON API's answer to a request to the session id
// that is gone: 499 if it was cancelled, else 404. up.mu is held.
func errSessionGone(up *core.Upload, id string) error {
	if up.Cancelled {
		return store.Errorf(kindCancelled, "upload session %q was cancelled", id)
	}
	return store.Errorf(store.KindNotFound, "no such upload session %q", id)
}
