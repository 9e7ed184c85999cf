package httpfront

import (
	"context"
	"net/http"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
)

// jsonPerms returns the permissions the JSON API request r, routed to
// method, needs.
func jsonPerms(method string, r *http.Request) core.Perm {
	switch method {
	case "objects.insert":
		if r.URL.Query().Get("upload_id") != "" {
			return 0 // the session URI is its own credential
		}
		return core.PermCreate
	case "objects.get", "xml.objects.get":
		return core.PermGet
	case "xml.objects.put":
		return core.PermCreate
	case "xml.multipart.initiate", "xml.multipart.uploadPart", "xml.multipart.complete":
		return core.PermMPUCreate | core.PermCreate
	case "xml.multipart.abort":
		return core.PermMPUAbort
	case "xml.multipart.listParts":
		return core.PermMPUListParts
	case "xml.multipart.list":
		return core.PermMPUList
	case "objects.list", "xml.objects.list":
		return core.PermList
	case "objects.delete":
		return core.PermDelete
	case "objects.patch", "objects.update":
		return core.PermUpdate
	case "objects.compose", "objects.copy", "objects.rewrite":
		return core.PermCreate | core.PermGet
	case "buckets.testIamPermissions":
		return 0
	case "objectAccessControls.list", "objectAccessControls.get":
		return core.PermGetIAM
	}
	switch {
	case strings.HasPrefix(method, "objectAccessControls."):
		return core.PermSetIAM
	case strings.HasPrefix(method, "objects."):
		return 0 // the methods the fake does not serve answer 501
	}
	return core.PermBucket
}

// authorizeHTTP returns r with the role of its token, and GCS's refusal if
// the role does not allow the JSON API method it was routed to.
func (s *Server) authorizeHTTP(r *http.Request, method string) (*http.Request, error) {
	if s.Creds == nil {
		return r, nil
	}
	role, ok := s.RoleOf(lastValue(r.Header, "Authorization"))
	if !ok {
		return r, nil
	}
	r = r.WithContext(context.WithValue(r.Context(), core.RoleKey{}, role))
	return r, core.Need(r.Context(), jsonPerms(method, r))
}
