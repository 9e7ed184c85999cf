package fakes

import (
	"context"
	"net/http"
	"strings"
)

// jsonPerms returns the permissions the JSON API request r, routed to
// method, needs.
func jsonPerms(method string, r *http.Request) perm {
	switch method {
	case "objects.insert":
		if r.URL.Query().Get("upload_id") != "" {
			return 0 // the session URI is its own credential
		}
		return permCreate
	case "objects.get", "xml.objects.get":
		return permGet
	case "xml.objects.put":
		return permCreate
	case "xml.multipart.initiate", "xml.multipart.uploadPart", "xml.multipart.complete":
		return permMPUCreate | permCreate
	case "xml.multipart.abort":
		return permMPUAbort
	case "xml.multipart.listParts":
		return permMPUListParts
	case "xml.multipart.list":
		return permMPUList
	case "objects.list", "xml.objects.list":
		return permList
	case "objects.delete":
		return permDelete
	case "objects.patch", "objects.update":
		return permUpdate
	case "objects.compose", "objects.copy", "objects.rewrite":
		return permCreate | permGet
	case "buckets.testIamPermissions":
		return 0
	case "objectAccessControls.list", "objectAccessControls.get":
		return permGetIAM
	}
	switch {
	case strings.HasPrefix(method, "objectAccessControls."):
		return permSetIAM
	case strings.HasPrefix(method, "objects."):
		return 0 // the methods the fake does not serve answer 501
	}
	return permBucket
}

// authorizeHTTP returns r with the role of its token, and GCS's refusal if
// the role does not allow the JSON API method it was routed to.
func (s *Server) authorizeHTTP(r *http.Request, method string) (*http.Request, error) {
	if s.creds == nil {
		return r, nil
	}
	role, ok := s.roleOf(lastValue(r.Header, "Authorization"))
	if !ok {
		return r, nil
	}
	r = r.WithContext(context.WithValue(r.Context(), roleKey{}, role))
	return r, need(r.Context(), jsonPerms(method, r))
}
