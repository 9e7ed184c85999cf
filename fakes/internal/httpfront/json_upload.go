package httpfront

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
)

// routeUpload routes a request on the upload path; path follows
// "/upload/storage/v1/". Every upload is objects.insert.
func (s *Server) routeUpload(r *http.Request, path string) *HTTPRoute {
	m := r.Method
	whole := m + " " + r.URL.Path
	first, rest, _ := strings.Cut(path, "/")
	bkt, rest, ok := segment(rest)
	if first != "b" || !ok || bkt == "" || rest != "o" {
		return unimplemented(m+" upload", whole)
	}
	q := r.URL.Query()
	rt := &HTTPRoute{method: "objects.insert", bucket: bkt, object: q.Get("name")}
	if id := q.Get("upload_id"); id != "" {
		switch m {
		case http.MethodPut, http.MethodPost:
			rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.uploadChunk(w, r, id) }
		case http.MethodDelete:
			rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.cancelUpload(w, id) }
		default:
			return unimplemented(m+" upload", whole)
		}
		return rt
	}
	if m != http.MethodPost {
		return unimplemented(m+" upload", whole)
	}
	switch t := q.Get("uploadType"); t {
	case "media":
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.insertMedia(w, r, bkt) }
	case "multipart":
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.insertMultipart(w, r, rt) }
	case "resumable":
		rt.serve = func(w http.ResponseWriter, r *http.Request) error { return s.startResumable(w, r, rt) }
	default:
		rt.serve = func(http.ResponseWriter, *http.Request) error {
			return store.Errorf(store.KindInvalid, "uploadType %q: an upload must set uploadType to media, multipart or resumable", t)
		}
	}
	return rt
}

// newJSONUpload returns the upload an insert request describes: the object
// name (query parameter name, else the metadata's), its attributes from the
// metadata, its preconditions and the declared checksums.
func (s *Server) newJSONUpload(r *http.Request, bkt string, meta core.ObjectMetadata) (*core.Upload, error) {
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		n, _, _, err := meta.Str("name")
		if err != nil {
			return nil, err
		}
		name = n
	}
	if name == "" {
		return nil, store.Errorf(store.KindInvalid, "required parameter: name (in the query or the object resource)")
	}
	if err := api.CheckObjectName(name); err != nil {
		return nil, err
	}
	cond, err := queryConditions(q)
	if err != nil {
		return nil, err
	}
	cond = core.OverwriteCond(r.Context(), cond) // WithCredential
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return nil, err
	}
	if b.Zonal() {
		return nil, store.ErrZonal(bkt, "a JSON API upload")
	}
	var a store.Attrs
	if err := meta.Apply(&a, false); err != nil {
		return nil, err
	}
	sc, _, _, err := meta.Str("storageClass")
	if err != nil {
		return nil, err
	}
	a.StorageClass = sc
	if ce := q.Get("contentEncoding"); ce != "" {
		a.ContentEncoding = ce
	}
	up := core.NewUpload(b, name, a, cond, nil)
	for _, f := range []string{"crc32c", "md5Hash"} {
		v, _, _, err := meta.Str(f)
		if err != nil || v == "" {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := declare(up, f, v); err != nil {
			return nil, err
		}
	}
	return up, nil
}

// finish stores a JSON upload whose content is complete and answers with
// its object resource. up.mu is held.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, up *core.Upload) error {
	if err := declareHashHeader(up, r.Header); err != nil {
		up.Drop()
		return err
	}
	if _, err := s.Finalize(r.Context(), up, lastValue(r.Header, header.TenantKey)); err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, resource(up.Bucket, up.Stored, baseURL(r)))
	return nil
}

// insertMedia serves uploadType=media: the body is the content, the query
// names the object, Content-Type is its content type.
func (s *Server) insertMedia(w http.ResponseWriter, r *http.Request, bkt string) error {
	up, err := s.newJSONUpload(r, bkt, nil)
	if err != nil {
		return err
	}
	if err := s.admitHTTP(r, bkt, up.Object); err != nil {
		return err
	}
	up.Attrs.ContentType = r.Header.Get("Content-Type")
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if err := readBody(r.Body, r.ContentLength, up); err != nil {
		return err
	}
	return s.finish(w, r, up)
}

// insertMultipart serves uploadType=multipart: a multipart/related body of
// the object resource (JSON) and the content, whose part's Content-Type is
// the content type unless the resource sets one.
func (s *Server) insertMultipart(w http.ResponseWriter, r *http.Request, rt *HTTPRoute) error {
	body := bufio.NewReaderSize(r.Body, boundaryPeek)
	boundary, ok := multipartBoundary(r.Header.Get("Content-Type"), body)
	if !ok {
		return store.Errorf(store.KindInvalid, "a multipart upload needs a multipart/related body with a boundary, not %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(body, boundary)
	part, err := mr.NextPart()
	if err != nil {
		return store.Errorf(store.KindInvalid, "multipart upload: reading the metadata part: %v", err)
	}
	var meta core.ObjectMetadata
	if err := json.NewDecoder(io.LimitReader(part, maxMetadataBody)).Decode(&meta); err != nil {
		return store.Errorf(store.KindInvalid, "multipart upload: the first part is not a JSON object resource: %v", err)
	}
	media, err := mr.NextPart()
	if err != nil {
		return store.Errorf(store.KindInvalid, "multipart upload: reading the media part: %v", err)
	}
	up, err := s.newJSONUpload(r, rt.bucket, meta)
	if err != nil {
		return err
	}
	rt.call.Object = up.Object
	if err := s.admitHTTP(r, rt.bucket, up.Object); err != nil {
		return err
	}
	if _, set := meta["contentType"]; !set {
		up.Attrs.ContentType = media.Header.Get("Content-Type")
	}
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if err := readBody(media, -1, up); err != nil {
		return err
	}
	// The body ends with the closing delimiter; a missing or mistyped
	// one is a body cut short.
	if p, err := mr.NextPart(); err != io.EOF {
		if err == nil {
			p.Close()
			err = errors.New("a third part")
		}
		return store.Errorf(store.KindInvalid, "multipart upload: the body does not end with its closing delimiter after the media: %v", err)
	}
	// And the request ends after it (what follows the delimiter, the
	// epilogue, is ignored): a body that ends before its Content-Length, or
	// a chunked one cut before its last chunk, was cut short, even after
	// its closing delimiter came.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return store.Errorf(store.KindInvalid, "multipart upload: the request body ended early, after its closing delimiter: %v", err)
	}
	return s.finish(w, r, up)
}

// startResumable serves uploadType=resumable: it opens a session and
// answers with its URI in Location. The body, if any, is the object
// resource; X-Upload-Content-Type and X-Upload-Content-Length give the
// content type and the size. As on GCS, the preconditions are checked now,
// and again when the object is stored.
func (s *Server) startResumable(w http.ResponseWriter, r *http.Request, rt *HTTPRoute) error {
	bkt := rt.bucket
	var meta core.ObjectMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&meta); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON object resource: %v", err)
	}
	up, err := s.newJSONUpload(r, bkt, meta)
	if err != nil {
		return err
	}
	rt.call.Object = up.Object
	if err := s.admitHTTP(r, rt.bucket, up.Object); err != nil {
		return err
	}
	if _, set := meta["contentType"]; !set {
		up.Attrs.ContentType = r.Header.Get("X-Upload-Content-Type")
	}
	if v := r.Header.Get("X-Upload-Content-Length"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return store.Errorf(store.KindInvalid, "X-Upload-Content-Length %q is not a size", v)
		}
		up.Limit = &n
	}
	if up.Cond != nil {
		live, _ := up.Bucket.Get(up.Object, 0)
		if err := up.Cond.Check(live); err != nil {
			return err
		}
	}
	if err := s.StartSession(up); err != nil {
		return err
	}
	loc := baseURL(r) + "/upload/storage/v1/b/" + url.PathEscape(bkt) + "/o?uploadType=resumable&name=" +
		url.QueryEscape(up.Object) + "&upload_id=" + up.ID
	h := w.Header()
	h.Set("Location", loc)
	h.Set("X-GUploader-UploadID", up.ID)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}
