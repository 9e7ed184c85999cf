package httpfront

import (
	"net/http"
	"strings"

	"github.com/objup/objup/fakes/internal/retrytest"
)

// retryResources are the JSON API resources whose retry test method names
// are not "storage." and the method's: the testbench's names for them.
var retryResources = map[string]string{
	"bucketAccessControls.":        "storage.bucket_acl.",
	"defaultObjectAccessControls.": "storage.default_object_acl.",
	"objectAccessControls.":        "storage.object_acl.",
	"projects.hmacKeys.":           "storage.hmacKey.",
	"projects.serviceAccount.":     "storage.serviceaccount.",
}

// retryName is the retry test method name of a JSON API method, such as
// "objects.get" (storage.objects.get) or "bucketAccessControls.list"
// (storage.bucket_acl.list).
func retryName(method string) string {
	for res, name := range retryResources {
		if verb, ok := strings.CutPrefix(method, res); ok {
			return name + verb
		}
	}
	return "storage." + method
}

// retryMethodOf returns the retry test method name of a request to a JSON
// API route ("objects.get" is "storage.objects.get"; the cancel of a
// resumable session, DELETE on its URI, is "storage.objects.delete", as
// in the testbench) or an XML API route (xmlMethods). The registry
// ignores a name it does not serve over HTTP.
func retryMethodOf(r *http.Request, route string) string {
	if x, ok := XMLMethods[route]; ok {
		return x.retry
	}
	name := retryName(route)
	if name == "storage.objects.insert" && r.Method == http.MethodDelete {
		name = "storage.objects.delete"
	}
	return name
}

// retryHTTP applies the retry test a JSON API request names to its route.
func (s *Server) retryHTTP(r *http.Request, rt *HTTPRoute) {
	if !s.Retry.Active() {
		return
	}
	rt.serve = s.Retry.HTTP(r, retryMethodOf(r, rt.method), rt.serve)
}

// RetryHTTP is the HTTP front's part of the retry test API's host
// (retrytest.Host): how it writes the API's answers, and what it knows of
// a resumable session's chunk.
type RetryHTTP struct{ S *Server }

// WriteError writes err as the JSON API does.
func (h RetryHTTP) WriteError(w http.ResponseWriter, err error) { WriteError(w, &HTTPRoute{}, err) }

// WriteJSON writes v as JSON with status st.
func (h RetryHTTP) WriteJSON(w http.ResponseWriter, st int, v any) { WriteJSON(w, st, v) }

// Chunk describes the chunk that r sends to the session uploadID.
func (h RetryHTTP) Chunk(r *http.Request, uploadID string) (retrytest.Chunk, bool) {
	cr, err := ParseContentRange(r.Header.Get("Content-Range"), r.ContentLength)
	if err != nil || cr.First < 0 {
		return retrytest.Chunk{}, false
	}
	up, err := h.S.JSONSession(uploadID)
	if err != nil {
		return retrytest.Chunk{}, false
	}
	up.Mu.Lock()
	persisted, done := up.Size, up.Stored != nil || up.Gone
	up.Mu.Unlock()
	return retrytest.Chunk{First: cr.First, Last: cr.Last, Open: cr.Open, Persisted: persisted, Done: done}, true
}
