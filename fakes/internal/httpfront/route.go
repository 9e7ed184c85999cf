package httpfront

import (
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
)

// httpRoute is what the router made of a request: the JSON API method it
// names (for the log and for error messages), its bucket and object, and the
// handler that serves it. Handlers return an error rather than writing it,
// so errors are written and logged in one place.
type HTTPRoute struct {
	method         string
	bucket, object string
	xml            bool // path-style (XML API) read: errors in XML
	serve          func(w http.ResponseWriter, r *http.Request) error
	call           *calls.Call // the log record, for handlers that learn the object name late
}

// serveHTTP is the JSON API server: it routes the request, serves it, writes
// the error if it failed, and records the call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if retrytest.IsPath(path) {
		s.Retry.ServeAPI(w, r, path)
		return
	}
	if path == startGRPCPath {
		s.serveStartGRPC(w, r)
		return
	}
	rt := s.route(r, path)
	c := &calls.Call{Method: rt.method, Bucket: rt.bucket, Object: rt.object, Tenant: lastValue(r.Header, header.TenantKey)}
	rt.call = c
	r, err := s.authorizeHTTP(r, rt.method)
	var f *httpFault
	if err == nil && rt.xml {
		w, r, f, err = s.xmlFaults(w, r, rt.method)
	}
	if err == nil {
		s.retryHTTP(r, rt)
		err = rt.serve(w, r)
	}
	if err, drop := f.dropped(err); drop {
		c.Code = status.Code(err)
		s.Log.Add(c)
		dropConn(w)
		return
	}
	if err != nil {
		if !retrytest.IsConnClosed(err) {
			WriteError(w, rt, err)
		}
		c.Code = status.Code(err)
	}
	s.Log.Add(c)
}

// lastValue returns the last value of the header key, or "".
func lastValue(h http.Header, key string) string {
	v := h.Values(key)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// unimplemented is the route of a request the fake does not serve: method
// names it, what may say more.
func unimplemented(method, what string) *HTTPRoute {
	msg := "fakes: " + method + " is not implemented by the fake"
	if what != method {
		msg += " (" + what + ")"
	}
	return &HTTPRoute{method: method, serve: func(http.ResponseWriter, *http.Request) error {
		return store.Errorf(store.KindUnimplemented, "%s", msg)
	}}
}

// route maps a request to its handler. path is the escaped path, so that an
// object name's escaped slashes stay inside its segment.
func (s *Server) route(r *http.Request, path string) *HTTPRoute {
	m := r.Method
	switch {
	case strings.HasPrefix(path, "/storage/v1/"):
		return s.routeJSON(r, strings.TrimPrefix(path, "/storage/v1/"), false)
	case strings.HasPrefix(path, "/download/storage/v1/"):
		if m != http.MethodGet && m != http.MethodHead {
			return unimplemented(m+" download", m+" "+path)
		}
		return s.routeJSON(r, strings.TrimPrefix(path, "/download/storage/v1/"), true)
	case strings.HasPrefix(path, "/upload/storage/v1/"):
		return s.routeUpload(r, strings.TrimPrefix(path, "/upload/storage/v1/"))
	case strings.HasPrefix(path, "/resumable/upload/storage/v1/"):
		// The resumable upload path of the API's discovery document
		// (apitools, under gcloud and gsutil, starts sessions there);
		// the same method as the upload path.
		return s.routeUpload(r, strings.TrimPrefix(path, "/resumable/upload/storage/v1/"))
	case strings.HasPrefix(path, "/batch/"):
		return unimplemented("batch", m+" "+path)
	}
	return s.routeXML(r, path)
}

// segment cuts the first segment off an escaped path and unescapes it.
func segment(path string) (seg, rest string, ok bool) {
	raw, rest, _ := strings.Cut(path, "/")
	seg, err := url.PathUnescape(raw)
	return seg, rest, err == nil
}

// objectActions are the object methods named by a path segment after the
// object name; the fake implements all but objects.restore and
// objects.move.
var objectActions = map[string]string{
	"compose":   "objects.compose",
	"copyTo":    "objects.copy",
	"rewriteTo": "objects.rewrite",
	"restore":   "objects.restore",
	"moveTo":    "objects.move",
	"acl":       "objectAccessControls",
}

// bucketMethods are the bucket sub-resources the fake does not implement
// (of managedFolders, it serves the list, always empty).
var bucketMethods = map[string]string{
	"operations":     "operations",
	"anywhereCaches": "anywhereCaches",
	"managedFolders": "managedFolders",
	"folders":        "folders",
}

// whole names a request in the message of an unimplemented route.
func whole(r *http.Request) string { return r.Method + " " + r.URL.Path }

// handler is a route's handler.
type handler = func(w http.ResponseWriter, r *http.Request) error

// to returns the route of a request served by fn.
func to(method, bucket, object string, fn handler) *HTTPRoute {
	return &HTTPRoute{method: method, bucket: bucket, object: object, serve: fn}
}

// routeJSON routes a JSON API request; path follows "/storage/v1/". With
// download, only objects.get for content is served.
func (s *Server) routeJSON(r *http.Request, path string, download bool) *HTTPRoute {
	m := r.Method
	first, rest, _ := strings.Cut(path, "/")
	if first == "projects" && !download {
		return s.routeProjects(r, rest)
	}
	if first != "b" {
		return unimplemented(m+" "+first, whole(r))
	}
	if rest == "" && !strings.HasSuffix(path, "/") && !download {
		switch m {
		case http.MethodGet:
			return &HTTPRoute{method: "buckets.list", serve: s.listBuckets}
		case http.MethodPost:
			return &HTTPRoute{method: "buckets.insert", serve: s.insertBucket}
		}
		return unimplemented(m+" buckets", whole(r))
	}
	bkt, rest, ok := segment(rest)
	if !ok || bkt == "" {
		return unimplemented(m+" buckets", whole(r))
	}
	sub, subPath, hasSub := strings.Cut(rest, "/")
	if download && sub != "o" {
		return unimplemented(m+" download", whole(r))
	}
	switch sub {
	case "":
		if hasSub {
			break
		}
		switch m {
		case http.MethodGet:
			return to("buckets.get", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.getBucket(w, r, bkt) })
		case http.MethodDelete:
			return to("buckets.delete", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.deleteBucket(w, r, bkt) })
		case http.MethodPatch:
			return to("buckets.patch", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.updateBucket(w, r, bkt, true) })
		case http.MethodPut:
			return to("buckets.update", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.updateBucket(w, r, bkt, false) })
		}
	case "acl", "defaultObjectAcl":
		return s.routeBucketACL(r, bkt, sub == "defaultObjectAcl", subPath, hasSub)
	case "iam":
		return s.routeIAM(r, bkt, subPath, hasSub)
	case "notificationConfigs":
		return s.routeNotifications(r, bkt, subPath, hasSub)
	case "lockRetentionPolicy":
		if m == http.MethodPost && !hasSub {
			return to("buckets.lockRetentionPolicy", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.lockRetention(w, r, bkt) })
		}
	case "o":
		return s.routeObjects(r, bkt, subPath, hasSub, download)
	case "managedFolders":
		if m == http.MethodGet && !hasSub {
			return to("managedFolders.list", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.listManagedFolders(w, r, bkt) })
		}
	case "storageLayout":
		if m == http.MethodGet && !hasSub {
			return to("buckets.getStorageLayout", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.getStorageLayout(w, r, bkt) })
		}
	default:
		if name := bucketMethods[sub]; name != "" {
			rt := unimplemented(name, whole(r))
			rt.bucket = bkt
			return rt
		}
	}
	name := m + " " + sub
	if sub == "" {
		name = m + " bucket"
	}
	rt := unimplemented(name, whole(r))
	rt.bucket = bkt
	return rt
}

// routeObjects routes a request under "b/BUCKET/o"; objPath follows it.
func (s *Server) routeObjects(r *http.Request, bkt, objPath string, hasSub, download bool) *HTTPRoute {
	m := r.Method
	if !hasSub && !download { // "b/BUCKET/o"
		switch m {
		case http.MethodGet:
			return to("objects.list", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.listObjects(w, r, bkt) })
		case http.MethodPost:
			rt := unimplemented("objects.insert", "objects.insert outside the upload path (use /upload/storage/v1/b/BUCKET/o)")
			rt.bucket = bkt
			return rt
		}
		return unimplemented(m+" objects", whole(r))
	}
	if objPath == "" {
		return unimplemented(m+" objects", whole(r))
	}
	if m == http.MethodPost && objPath == "watch" {
		rt := unimplemented("objects.watchAll", "objects.watchAll")
		rt.bucket = bkt
		return rt
	}
	name, action, rest := objectName(objPath)
	rt := &HTTPRoute{bucket: bkt, object: name}
	if download {
		if action != "" {
			return unimplemented(m+" download", whole(r))
		}
		rt.method = "objects.get"
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.getObject(w, r, bkt, name, true) }
		return rt
	}
	switch {
	case action == "objects.compose" && m == http.MethodPost && rest == "":
		rt.method = action
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.composeObject(w, r, bkt, name) }
		return rt
	case (action == "objects.copy" || action == "objects.rewrite") && m == http.MethodPost:
		rewrite := action == "objects.rewrite"
		rt.method = action
		rt.serve = func(w http.ResponseWriter, r *http.Request) error {
			return s.copyObject(w, r, bkt, name, rest, rewrite)
		}
		return rt
	case action == "objectAccessControls":
		return s.routeObjectACL(r, bkt, name, rest)
	case action != "":
		rt.method = action
		rt.serve = unimplemented(action, action).serve
		return rt
	}
	switch m {
	case http.MethodGet, http.MethodHead:
		rt.method = "objects.get"
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.getObject(w, r, bkt, name, false) }
	case http.MethodDelete:
		rt.method = "objects.delete"
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.deleteObject(w, r, bkt, name) }
	case http.MethodPatch:
		rt.method = "objects.patch"
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.updateObject(w, r, bkt, name, true) }
	case http.MethodPut:
		rt.method = "objects.update"
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.updateObject(w, r, bkt, name, false) }
	default:
		rt.method = m + " object"
		rt.serve = unimplemented(rt.method, whole(r)).serve
	}
	return rt
}

// objectName reads the object name of an escaped path that follows "/o/".
// Clients escape the slashes of a name, so a name is one segment; a second
// segment names an action (compose, copyTo, acl, ...), and rest is the
// escaped path after it, unless it is none of those, in which case the
// unescaped slashes are taken as part of the name, as some tools send
// them.
func objectName(objPath string) (name, action, rest string) {
	first, after, more := strings.Cut(objPath, "/")
	if more {
		verb, rest, _ := strings.Cut(after, "/")
		if a, ok := objectActions[verb]; ok {
			n, _ := url.PathUnescape(first)
			return n, a, rest
		}
	}
	n, err := url.PathUnescape(objPath)
	if err != nil {
		return objPath, "", ""
	}
	return n, "", ""
}
