package httpfront

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/api"
)

// routeXML routes a path-style request, /BUCKET/OBJECT or /BUCKET: the XML
// API, of which the fake serves object reads (GET and HEAD, the form the
// official Go client uses to read over HTTP), simple uploads (PUT),
// multipart uploads (see xml_multipart.go) and the list of a bucket's
// objects (xml_bucket.go). Its errors are XML.
func (s *Server) routeXML(r *http.Request, path string) *HTTPRoute {
	m := r.Method
	rawBucket, rawObject, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	bkt, err1 := url.PathUnescape(rawBucket)
	name, err2 := url.PathUnescape(rawObject)
	q := r.URL.Query()
	rt := &HTTPRoute{bucket: bkt, object: name, xml: true}
	var serve handler
	switch {
	case err1 != nil || err2 != nil || bkt == "":
	case len(pick(q, xmlSubresources...)) > 0:
		// ACLs, retention, ...: not the object, nor its list.
	case name == "":
		switch {
		case m == http.MethodGet && q.Has("uploads"):
			rt.method, serve = "xml.multipart.list", func(w http.ResponseWriter, r *http.Request) error { return s.xmlListUploads(w, r, bkt) }
		case m == http.MethodGet && len(q) == len(pick(q, "prefix", "delimiter", "marker", "max-keys", "encoding-type", "versions", "list-type")):
			rt.method, serve = "xml.objects.list", func(w http.ResponseWriter, r *http.Request) error { return s.xmlListObjects(w, r, bkt) }
		}
	case q.Has("uploadId"):
		id := q.Get("uploadId")
		switch m {
		case http.MethodPut:
			rt.method, serve = "xml.multipart.uploadPart", func(w http.ResponseWriter, r *http.Request) error { return s.xmlUploadPart(w, r, bkt, name, id) }
		case http.MethodPost:
			rt.method, serve = "xml.multipart.complete", func(w http.ResponseWriter, r *http.Request) error { return s.xmlComplete(w, r, rt, id) }
		case http.MethodDelete:
			rt.method, serve = "xml.multipart.abort", func(w http.ResponseWriter, r *http.Request) error { return s.xmlAbort(w, bkt, name, id) }
		case http.MethodGet:
			rt.method, serve = "xml.multipart.listParts", func(w http.ResponseWriter, r *http.Request) error { return s.xmlListParts(w, r, bkt, name, id) }
		}
	case m == http.MethodPost && q.Has("uploads"):
		rt.method, serve = "xml.multipart.initiate", func(w http.ResponseWriter, r *http.Request) error { return s.xmlInitiate(w, r, bkt, name) }
	case m == http.MethodPut && r.Header.Get("X-Goog-Copy-Source") == "":
		rt.method, serve = "xml.objects.put", func(w http.ResponseWriter, r *http.Request) error { return s.xmlPutObject(w, r, bkt, name) }
	case m == http.MethodGet || m == http.MethodHead:
		rt.method, serve = "xml.objects.get", func(w http.ResponseWriter, r *http.Request) error { return s.xmlGetObject(w, r, bkt, name) }
	}
	if serve == nil {
		u := unimplemented("xml "+m, "the XML API's "+m+" "+r.URL.Path)
		u.xml = true
		return u
	}
	rt.serve = serve
	return rt
}

// xmlSubresources are the query parameters that name another resource
// than an object or a bucket's list (an object's ACL, a bucket's
// lifecycle, ...), which the fake does not serve over the XML API.
var xmlSubresources = []string{"acl", "encryption", "retention", "legalHold", "tagging", "cors", "lifecycle",
	"logging", "versioning", "website", "storageClass", "billing", "iamPolicy", "location", "defaultObjectAcl",
	"encryptionConfig", "compose", "restore", "object-lock"}

// pick returns the keys of q among keys.
func pick(q url.Values, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if q.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// xmlGetObject serves an XML API read: the query's generation and the
// x-goog-if-generation-match and x-goog-if-metageneration-match headers
// select and check the object.
func (s *Server) xmlGetObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	if err := api.CheckObjectName(name); err != nil {
		return err
	}
	gen, err := queryInt(r.URL.Query(), "generation")
	if err != nil {
		return err
	}
	cond, err := xmlConditions(r.Header)
	if err != nil {
		return err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	o, err := b.Get(name, gen)
	if err != nil {
		return err
	}
	if err := cond.Check(o); err != nil {
		return err
	}
	return serveContent(w, r, o, true)
}

// xmlError is the XML API's error document.
type xmlError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string   `xml:"Code"`
	Message string   `xml:"Message"`
	// Details says more, as GCS's documents do; Google's Python client
	// reads it from the error of a part's upload.
	Details string `xml:"Details"`
}

// xmlCodes are the XML API's error codes by JSON reason. A reason that is
// itself an XML API error code (it starts with a capital letter: the
// kinds of xml_headers.go and package mpu) is answered as it is.
var xmlCodes = map[string]string{
	"notFound":                     "NoSuchKey",
	"conditionNotMet":              "PreconditionFailed",
	"requestedRangeNotSatisfiable": "InvalidRange",
	"invalid":                      "InvalidArgument",
	"notImplemented":               "NotImplemented",
	"forbidden":                    "AccessDenied",
	"required":                     "AuthenticationRequired",
	"rateLimitExceeded":            "SlowDown",
	"failedPrecondition":           "FailedPrecondition",
	"conflict":                     "Conflict",
}

func writeXMLError(w http.ResponseWriter, st int, reason, msg string) {
	code := xmlCodes[reason]
	switch {
	case code != "":
	case reason != "" && reason[0] >= 'A' && reason[0] <= 'Z':
		code = reason
	case st == http.StatusServiceUnavailable:
		code = "ServiceUnavailable"
	default:
		code = "InternalError"
	}
	b, _ := xml.Marshal(&xmlError{Code: code, Message: msg, Details: msg})
	b = append([]byte(xml.Header), b...)
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(st)
	w.Write(b)
}
