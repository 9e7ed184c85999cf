package fakes

import (
	"context"
	"net/http"
	"strings"
)

// jsonPerms returns the permissions the JSON API request r, routed to
// method, needs.
func jsonPerms(method string, r *http.Request) Perm {
	switch method {
	case "objects.insert":
		if r.URL.Query().Get("upload_id") != "" {
			return 0 // the session URI is its own credential
		}
		return PermCreate
	case "objects.get", "xml.objects.get":
		return PermGet
	case "xml.objects.put":
		return PermCreate
	case "xml.multipart.initiate", "xml.multipart.uploadPart", "xml.multipart.complete":
		return PermMPUCreate | PermCreate
	case "xml.multipart.abort":
		return PermMPUAbort
	case "xml.multipart.listParts":
		return PermMPUListParts
	case "xml.multipart.list":
		return PermMPUList
	case "objects.list", "xml.objects.list":
		return PermList
	case "objects.delete":
		return PermDelete
	case "objects.patch", "objects.update":
		return PermUpdate
	case "objects.compose", "objects.copy", "objects.rewrite":
		return PermCreate | PermGet
	case "buckets.testIamPermissions":
		return 0
	case "objectAccessControls.list", "objectAccessControls.get":
		return PermGetIAM
	}
	switch {
	case strings.HasPrefix(method, "objectAccessControls."):
		return PermSetIAM
	case strings.HasPrefix(method, "objects."):
		return 0 // the methods the fake does not serve answer 501
	}
	return PermBucket
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
	r = r.WithContext(context.WithValue(r.Context(), RoleKey{}, role))
	return r, Need(r.Context(), jsonPerms(method, r))
}
