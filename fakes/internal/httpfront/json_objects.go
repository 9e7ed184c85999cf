package httpfront

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// maxMetadataBody bounds the JSON body of a metadata request.
const maxMetadataBody = 1 << 20

// objectOf reads the generation and preconditions of an object request and
// returns the object they select, checked.
func (s *Server) objectOf(r *http.Request, bkt, name string) (*store.Bucket, *store.Object, error) {
	b, gen, cond, err := s.objectArgs(r, bkt, name)
	if err != nil {
		return nil, nil, err
	}
	o, err := b.Get(name, gen)
	if err != nil {
		return nil, nil, err
	}
	if err := cond.Check(o); err != nil {
		return nil, nil, err
	}
	return b, o, nil
}

// objectArgs checks the object name of a request on one object and reads
// what selects it: its bucket, the generation (0: the live object) and
// the preconditions.
func (s *Server) objectArgs(r *http.Request, bkt, name string) (*store.Bucket, int64, *store.Conditions, error) {
	if err := api.CheckObjectName(name); err != nil {
		return nil, 0, nil, err
	}
	q := r.URL.Query()
	gen, err := queryInt(q, "generation")
	if err != nil {
		return nil, 0, nil, err
	}
	cond, err := queryConditions(q)
	if err != nil {
		return nil, 0, nil, err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return nil, 0, nil, err
	}
	return b, gen, cond, nil
}

// getObject serves objects.get: the object resource, or its content with
// alt=media (always on the download path).
func (s *Server) getObject(w http.ResponseWriter, r *http.Request, bkt, name string, media bool) error {
	q := r.URL.Query()
	switch alt := q.Get("alt"); alt {
	case "media":
		media = true
	case "", "json":
	default:
		return store.Errorf(store.KindInvalid, "alt=%q is not supported; use json or media", alt)
	}
	if q.Get("softDeleted") == "true" {
		return store.Errorf(store.KindUnimplemented, "fakes: soft-deleted objects are not implemented by the fake")
	}
	b, o, err := s.objectOf(r, bkt, name)
	if err != nil {
		return err
	}
	if media {
		return serveContent(w, r, o, false)
	}
	WriteJSON(w, http.StatusOK, resource(b, o, baseURL(r)))
	return nil
}

// serveContent writes an object's content, or the byte range the Range
// header asks for, with the headers GCS sends: the generation,
// metageneration and hashes (x-goog-hash) and the stored length and
// encoding. xml selects the XML API's form of x-goog-hash (one header per
// hash) and of metadata (x-goog-meta-*).
func serveContent(w http.ResponseWriter, r *http.Request, o *store.Object, xml bool) error {
	start, end, partial, err := parseRange(r.Header.Get("Range"), o.Size())
	if err != nil {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(o.Size(), 10))
		return err
	}
	h := w.Header()
	ct := o.Attrs().ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("X-Goog-Generation", strconv.FormatInt(o.Generation(), 10))
	h.Set("X-Goog-Metageneration", strconv.FormatInt(o.Metageneration(), 10))
	crc := "crc32c=" + encodeCRC32C(o.CRC32C())
	switch {
	case !o.HasMD5():
		h.Set("X-Goog-Hash", crc)
	case xml:
		h.Add("X-Goog-Hash", crc)
		h.Add("X-Goog-Hash", "md5="+md5Text(o))
	default:
		h.Set("X-Goog-Hash", crc+",md5="+md5Text(o))
	}
	h.Set("X-Goog-Stored-Content-Length", strconv.FormatInt(o.Size(), 10))
	enc := o.Attrs().ContentEncoding
	if enc == "" {
		enc = "identity"
	}
	h.Set("X-Goog-Stored-Content-Encoding", enc)
	if enc != "identity" {
		h.Set("Content-Encoding", enc)
	}
	h.Set("X-Goog-Storage-Class", o.Attrs().StorageClass)
	if xml {
		h.Set("Etag", objectETag(o)) // the MD5 in hex, if any, as GCS's XML API
	} else {
		h.Set("Etag", `"`+api.ObjectETag(o.Generation(), o.Metageneration())+`"`)
	}
	h.Set("Last-Modified", time.UnixMicro(o.Updated()).UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	for _, kv := range [][2]string{{"Cache-Control", o.Attrs().CacheControl}, {"Content-Disposition", o.Attrs().ContentDisposition}, {"Content-Language", o.Attrs().ContentLanguage}} {
		if kv[1] != "" {
			h.Set(kv[0], kv[1])
		}
	}
	if xml {
		for k, v := range o.Attrs().Metadata {
			h.Set("X-Goog-Meta-"+k, v)
		}
	}
	h.Set("Content-Length", strconv.FormatInt(end-start, 10))
	st := http.StatusOK
	if partial {
		st = http.StatusPartialContent
		h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(end-1, 10)+"/"+strconv.FormatInt(o.Size(), 10))
	}
	if xml {
		lowerGoogHeaders(h)
	}
	w.WriteHeader(st)
	if r.Method == http.MethodHead {
		return nil
	}
	// A failed write means the client went away; the status is sent.
	o.WriteRange(w, start, end)
	return nil
}

// parseRange reads a Range header for an object of size bytes: one range,
// "bytes=A-B", "bytes=A-" or "bytes=-N". A header the fake cannot parse, or
// with several ranges, is ignored, as HTTP allows; a range that starts past
// the end is 416.
func parseRange(h string, size int64) (start, end int64, partial bool, err error) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if h == "" || !ok || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, size, false, nil
	}
	if a == "" { // suffix: the last N bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, size, false, nil
		}
		if n == 0 {
			return 0, 0, false, store.Errorf(store.KindRange, "range %q is not satisfiable", h)
		}
		return max(0, size-n), size, true, nil
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end = size
	var err2 error
	if b != "" {
		var last int64
		last, err2 = strconv.ParseInt(b, 10, 64)
		end = min(last+1, size)
		if err2 == nil && last < start {
			return 0, size, false, nil
		}
	}
	if err1 != nil || err2 != nil || start < 0 {
		return 0, size, false, nil
	}
	if start >= size {
		if size == 0 && start == 0 {
			return 0, 0, false, nil
		}
		return 0, 0, false, store.Errorf(store.KindRange, "range %q is not satisfiable: the object has %d bytes", h, size)
	}
	return start, end, true, nil
}

// deleteObject serves objects.delete.
func (s *Server) deleteObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	if err := s.admitHTTP(r, bkt, name); err != nil {
		return err
	}
	if err := api.CheckObjectName(name); err != nil {
		return err
	}
	q := r.URL.Query()
	gen, err := queryInt(q, "generation")
	if err != nil {
		return err
	}
	cond, err := queryConditions(q)
	if err != nil {
		return err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	if err := b.Remove(name, gen, cond); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// updateObject serves objects.patch (patch) and objects.update: a metadata
// change, which bumps the metageneration. The predefinedAcl parameter
// replaces the object's ACL, after the body's acl.
func (s *Server) updateObject(w http.ResponseWriter, r *http.Request, bkt, name string, patch bool) error {
	if err := s.admitHTTP(r, bkt, name); err != nil {
		return err
	}
	var m core.ObjectMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&m); err != nil {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON object resource: %v", err)
	}
	predefined := r.URL.Query().Get("predefinedAcl")
	b, o, err := s.editObject(r, bkt, name, func(a *store.Attrs) error {
		if err := m.Apply(a, patch); err != nil {
			return err
		}
		return core.ApplyPredefinedACL(a, predefined)
	})
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, resource(b, o, baseURL(r)))
	return nil
}

// editObject changes the attributes of the object a request names (the
// live one, or the generation parameter's) with edit, under the request's
// preconditions, and returns it: the metageneration goes up by one.
func (s *Server) editObject(r *http.Request, bkt, name string, edit func(*store.Attrs) error) (*store.Bucket, *store.Object, error) {
	b, gen, cond, err := s.objectArgs(r, bkt, name)
	if err != nil {
		return nil, nil, err
	}
	o, err := b.Update(name, gen, cond, edit)
	if err != nil {
		return nil, nil, err
	}
	return b, o, nil
}

// listObjects serves objects.list.
func (s *Server) listObjects(w http.ResponseWriter, r *http.Request, bkt string) error {
	q := r.URL.Query()
	if q.Get("matchGlob") != "" {
		return store.Errorf(store.KindUnimplemented, "fakes: objects.list with matchGlob is not implemented by the fake")
	}
	if v, err := queryBool(q, "softDeleted"); err != nil || v {
		return store.Errorf(store.KindUnimplemented, "fakes: objects.list with softDeleted is not implemented by the fake")
	}
	// includeFoldersAsPrefixes adds folders and managed folders to the
	// prefixes (it applies with the delimiter "/" only); the fake has
	// neither, so the listing is the same.
	if _, err := queryBool(q, "includeFoldersAsPrefixes"); err != nil {
		return err
	}
	size, err := queryInt(q, "maxResults")
	switch {
	case err != nil:
		return err
	case size < 0:
		return store.Errorf(store.KindInvalid, "maxResults is %d", size)
	case size == 0:
		size = core.DefaultPageSize
	}
	versions, err := queryBool(q, "versions")
	if err != nil {
		return err
	}
	trailing, err := queryBool(q, "includeTrailingDelimiter")
	if err != nil {
		return err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	page, err := b.List(&store.ListQuery{
		Prefix:                   q.Get("prefix"),
		Delimiter:                q.Get("delimiter"),
		StartOffset:              q.Get("startOffset"),
		EndOffset:                q.Get("endOffset"),
		IncludeTrailingDelimiter: trailing,
		Versions:                 versions,
		PageSize:                 int(min(size, core.MaxPageSize)),
		Token:                    q.Get("pageToken"),
	})
	if err != nil {
		return err
	}
	out := &objectList{Kind: "storage#objects", NextPageToken: page.Next, Prefixes: page.Prefixes}
	base := baseURL(r)
	out.Items = make([]*objectResource, len(page.Objects))
	for i, o := range page.Objects {
		out.Items[i] = resource(b, o, base)
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}
