package fakes

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
)

// routeXML routes a path-style request, /BUCKET/OBJECT: the XML API, of
// which the fake serves object reads (GET and HEAD), the form the official
// Go client uses to read over HTTP.
func (s *Server) routeXML(r *http.Request, path string) *httpRoute {
	m := r.Method
	rawBucket, rawObject, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	bkt, err1 := url.PathUnescape(rawBucket)
	name, err2 := url.PathUnescape(rawObject)
	if err1 != nil || err2 != nil || bkt == "" || name == "" || m != http.MethodGet && m != http.MethodHead {
		rt := unimplemented("xml "+m, "the XML API's "+m+" "+r.URL.Path)
		rt.xml = true
		return rt
	}
	return &httpRoute{method: "xml.objects.get", bucket: bkt, object: name, xml: true,
		serve: func(w http.ResponseWriter, r *http.Request) error { return s.xmlGetObject(w, r, bkt, name) }}
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
	var cond *store.Conditions
	for _, h := range []struct {
		key string
		dst func(c *store.Conditions, v *int64)
	}{
		{"X-Goog-If-Generation-Match", func(c *store.Conditions, v *int64) { c.GenMatch = v }},
		{"X-Goog-If-Metageneration-Match", func(c *store.Conditions, v *int64) { c.MetaMatch = v }},
	} {
		v := r.Header.Get(h.key)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return store.Errorf(store.KindInvalid, "%s %q is not a number", h.key, v)
		}
		if cond == nil {
			cond = &store.Conditions{}
		}
		h.dst(cond, &n)
	}
	b, err := s.store.Bucket(bkt)
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
}

// xmlCodes are the XML API's error codes by JSON reason.
var xmlCodes = map[string]string{
	"notFound":                     "NoSuchKey",
	"conditionNotMet":              "PreconditionFailed",
	"requestedRangeNotSatisfiable": "InvalidRange",
	"invalid":                      "InvalidArgument",
	"notImplemented":               "NotImplemented",
}

func writeXMLError(w http.ResponseWriter, st int, reason, msg string) {
	code := xmlCodes[reason]
	if code == "" {
		code = "InternalError"
	}
	b, _ := xml.Marshal(&xmlError{Code: code, Message: msg})
	b = append([]byte(xml.Header), b...)
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(st)
	w.Write(b)
}
