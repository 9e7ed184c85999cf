package httpfront

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/objup/objup/internal/wire"
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

// declare records a whole-object checksum the client declared: crc32c or
// md5 (md5Hash), base64 as in the JSON API.
func declare(up *core.Upload, kind, v string) error {
	if up.Sums == nil {
		up.Sums = &wire.ObjectChecksums{}
	}
	switch kind {
	case "crc32c":
		c, ok := decodeCRC32C(v)
		if !ok {
			return store.Errorf(store.KindInvalid, "crc32c %q is not the base64 of 4 bytes", v)
		}
		up.Sums.Crc32C = &c
	case "md5", "md5Hash":
		m, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(m) != store.MD5Len {
			return store.Errorf(store.KindInvalid, "md5Hash %q is not the base64 of 16 bytes", v)
		}
		up.Sums.Md5Hash = m
	}
	return nil
}

// declareHashHeader records the checksums of an X-Goog-Hash header,
// "crc32c=B64,md5=B64" (in one header or several).
func declareHashHeader(up *core.Upload, h http.Header) error {
	for _, line := range h.Values("X-Goog-Hash") {
		for _, kv := range strings.Split(line, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k != "crc32c" && k != "md5" {
				continue
			}
			if err := declare(up, k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// readBody adds the request body to the upload: n bytes in parts of at most
// 2 MiB read straight into their own memory, or, when n < 0 (length not
// known: a chunked body, or a multipart part), through a pooled buffer with
// one copy into exactly sized parts, until the body's clean end. A body that
// ends early (before n bytes, a chunked body cut off, a part without its
// closing delimiter) is an error, and the caller stores nothing: GCS never
// keeps a partial object. up.mu is held, or up is not shared yet.
func readBody(r io.Reader, n int64, up *core.Upload) error {
	parts, err := readParts(r, n)
	for _, p := range parts {
		up.AddUnchecked(p)
	}
	if err != nil {
		return store.Errorf(store.KindInvalid, "%v after %d bytes", err, up.Size)
	}
	return nil
}

// readParts reads a request body as readBody does, into parts of at most
// 2 MiB, without touching any upload: what arrived, and an error if the
// body ended early. With n >= 0 it reads n bytes and no more: see bodyEnd.
func readParts(r io.Reader, n int64) ([][]byte, error) {
	var parts [][]byte
	if n >= 0 {
		for n > 0 {
			p := make([]byte, min(n, core.MaxChunk))
			k, err := io.ReadFull(r, p)
			if err != nil {
				if k > 0 {
					parts = append(parts, p[:k])
				}
				return parts, fmt.Errorf("the request body ended %d bytes before its declared length: %v", n-int64(k), err)
			}
			parts = append(parts, p)
			n -= int64(len(p))
		}
		return parts, nil
	}
	bp := core.ReadBufs.Get().(*[]byte)
	defer core.ReadBufs.Put(bp)
	buf := *bp
	for {
		// Fill the buffer, keeping the reader's own error: io.EOF is the
		// body's clean end, anything else (io.ErrUnexpectedEOF from a
		// chunked body cut off, or from a part whose closing delimiter
		// never came) an early one.
		k := 0
		var err error
		for k < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[k:])
			k += m
		}
		if k > 0 {
			parts = append(parts, bytes.Clone(buf[:k]))
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return parts, nil
		default:
			return parts, fmt.Errorf("the request body ended early: %v", err)
		}
	}
}

// errBodyTooLong is bodyEnd's error for a body that goes on past the
// content its request declared.
var errBodyTooLong = errors.New("the request body is longer than its Content-Range")

// bodyEnd checks that a request body whose declared content was read ends
// there, cleanly: a chunked body must still end with its last (empty) chunk,
// and a request whose connection broke before that was cut short, however
// many bytes it brought. A body that goes on is errBodyTooLong.
func bodyEnd(r io.Reader) error {
	var b [1]byte
	for {
		k, err := r.Read(b[:])
		switch {
		case k > 0:
			return errBodyTooLong
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("the request body ended early: %v", err)
		}
	}
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

// contentRange is a resumable request's Content-Range.
type contentRange struct {
	First, Last int64 // the bytes of this request; first < 0: none
	total       int64 // the object's size; < 0: not known yet
	// open: "bytes A-*/T" or "bytes A-*/*", the request's bytes run from A
	// to the end of its body (last is set once the body is read, or from
	// Content-Length). With a total of "*" the body is the object's last
	// bytes: the upload completes where it ends.
	Open bool
}

// parseContentRange reads the Content-Range forms GCS accepts on a
// resumable session: "bytes A-B/T" and "bytes A-B/*" (a chunk, with the
// object's size or not yet), "bytes */T" and "bytes */*" (no bytes: a
// status query, or the completion at T bytes), and "bytes A-*/T" and
// "bytes A-*/*" (the rest of the object from A, to the end of the body,
// as the Node.js client sends a whole upload in one request). Without the
// header, the body is the whole object. bodyLen is the request's
// Content-Length, -1 if not known.
func ParseContentRange(h string, bodyLen int64) (contentRange, error) {
	if h == "" {
		if bodyLen <= 0 {
			return contentRange{First: -1, total: -1}, nil
		}
		return contentRange{First: 0, Last: bodyLen - 1, total: bodyLen}, nil
	}
	bad := store.Errorf(store.KindInvalid, "Content-Range %q is not bytes A-B/T, A-B/*, A-*/T, A-*/*, */T or */*", h)
	spec, ok := strings.CutPrefix(h, "bytes ")
	rng, tot, ok2 := strings.Cut(strings.TrimSpace(spec), "/")
	if !ok || !ok2 {
		return contentRange{}, bad
	}
	cr := contentRange{First: -1, total: -1}
	if tot != "*" {
		n, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || n < 0 {
			return contentRange{}, bad
		}
		cr.total = n
	}
	if rng == "*" {
		return cr, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	if !ok || err1 != nil || first < 0 || cr.total >= 0 && first > cr.total {
		return contentRange{}, bad
	}
	cr.First = first
	if b == "*" {
		cr.Open = true
		cr.Last = first - 1 // no bytes yet
		if bodyLen >= 0 {
			cr.Last = first + bodyLen - 1
		}
		if cr.total >= 0 && cr.Last >= cr.total {
			return contentRange{}, bad
		}
		return cr, nil
	}
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err2 != nil || last < first || cr.total >= 0 && last >= cr.total {
		return contentRange{}, bad
	}
	cr.Last = last
	return cr, nil
}

// session returns the JSON resumable session id.
func (s *Server) JSONSession(id string) (*core.Upload, error) {
	up, ok := s.Resumables.Get(id)
	if !ok {
		return nil, store.Errorf(store.KindNotFound, "no such upload session %q", id)
	}
	return up, nil
}

// cutQuantum is the unit in which a resumable session keeps the bytes of a
// chunk whose request was cut short, as GCS persists them: 256 KiB of the
// object.
const cutQuantum = 256 << 10

// uploadChunk serves a request to a resumable session: a chunk of content
// (bytes A-B, or A-* to the end of its body), the completion (a known
// total reached), or a status query (no bytes). A chunk that starts before the bytes already persisted is
// accepted and its overlap dropped, as GCS does for a retried chunk; one that
// starts after them is refused. A chunk whose request ends early (before its
// Content-Length or the end of its chunked body) is refused, and its session
// keeps the bytes that arrived up to a multiple of 256 KiB of the object,
// as GCS does, never all of an object whose size is known: a cut chunk never
// completes the upload. An unfinished session answers "308 Resume
// Incomplete" with the persisted range, or 200 with
// X-Http-Status-Code-Override: 308 for clients that send X-GUploader-No-308.
func (s *Server) uploadChunk(w http.ResponseWriter, r *http.Request, id string) error {
	up, err := s.JSONSession(id)
	if err != nil {
		return err
	}
	cr, err := ParseContentRange(r.Header.Get("Content-Range"), r.ContentLength)
	if err != nil {
		return err
	}
	// The chunk is read before the session's lock is taken: a client
	// whose connection died mid-body must not hold the session, so that
	// its status query, on a new connection, is answered at once.
	var (
		parts [][]byte
		cut   error // the request ended early; parts holds what arrived
	)
	if cr.First >= 0 {
		n := cr.Last + 1 - cr.First
		switch {
		case cr.Open:
			// To the end of the body: Content-Length bytes, or up to
			// the clean end of a chunked body.
			n = r.ContentLength
		case r.ContentLength >= 0 && r.ContentLength != n:
			return store.Errorf(store.KindInvalid, "Content-Range %q announces %d bytes, the body has %d", r.Header.Get("Content-Range"), n, r.ContentLength)
		}
		if parts, cut = readParts(r.Body, n); cut == nil && n >= 0 {
			cut = bodyEnd(r.Body)
		}
		if errors.Is(cut, errBodyTooLong) {
			return store.Errorf(store.KindInvalid, "%v %q", cut, r.Header.Get("Content-Range"))
		}
	}
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if up.Gone {
		return errSessionGone(up, id)
	}
	if up.Stored != nil {
		WriteJSON(w, http.StatusOK, resource(up.Bucket, up.Stored, baseURL(r)))
		return nil
	}
	if cut != nil {
		// Cut short: the session keeps what arrived in whole units of
		// 256 KiB, as GCS does, short of the object's end, for the
		// client to resume from.
		end := (cr.First + partsLen(parts)) / cutQuantum * cutQuantum
		for _, size := range []*int64{&cr.total, up.Limit} {
			if size != nil && *size >= 0 {
				end = min(end, max(*size-1, 0)/cutQuantum*cutQuantum)
			}
		}
		if cr.First <= up.Size {
			addFrom(up, parts, cr.First, end)
		}
		return store.Errorf(store.KindInvalid, "%v; the session has %d bytes", cut, up.Size)
	}
	if cr.Open {
		if err := cr.close(partsLen(parts), up); err != nil {
			return err
		}
	}
	if cr.First > up.Size {
		return store.Errorf(store.KindInvalid, "the chunk starts at byte %d, but the session has %d bytes: a gap", cr.First, up.Size)
	}
	if cr.First >= 0 && cr.Last >= cr.First {
		// A chunk that starts before the persisted bytes (a retry) has
		// its overlap dropped.
		addFrom(up, parts, cr.First, cr.Last+1)
		if up.Limit != nil && up.Size > *up.Limit {
			return store.Errorf(store.KindInvalid, "the session has %d bytes, more than the %d declared", up.Size, *up.Limit)
		}
	}
	switch {
	case cr.total >= 0 && up.Size > cr.total:
		return store.Errorf(store.KindInvalid, "the session has %d bytes, more than the total of %d in Content-Range", up.Size, cr.total)
	case cr.total >= 0 && up.Size == cr.total:
		return s.finish(w, r, up)
	}
	h := w.Header()
	if up.Size > 0 {
		h.Set("Range", "bytes=0-"+strconv.FormatInt(up.Size-1, 10))
	}
	h.Set("Content-Length", "0")
	if r.Header.Get("X-GUploader-No-308") == "yes" {
		h.Set("X-Http-Status-Code-Override", "308")
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusPermanentRedirect)
	}
	return nil
}

// partsLen is the number of bytes in parts.
func partsLen(parts [][]byte) int64 {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	return n
}

// close sets the last byte of an open range ("bytes A-*/...") once its body
// of got bytes is read. Its total, if "*", is where the body ends: the
// size the session declared (X-Upload-Content-Length), else the body's
// end, which makes the request the upload's last. up.mu is held.
func (cr *contentRange) close(got int64, up *core.Upload) error {
	cr.Last = cr.First + got - 1
	if cr.total < 0 {
		cr.total = cr.Last + 1
		if up.Limit != nil {
			cr.total = *up.Limit
		}
	}
	if cr.Last >= cr.total {
		return store.Errorf(store.KindInvalid, "the request has bytes %d to %d, past the total of %d", cr.First, cr.Last, cr.total)
	}
	return nil
}

// addFrom adds to a session the bytes of parts, which start at byte first
// of the object, from its persisted size up to byte end: the overlap with
// the bytes it has is dropped. first must not be past up.size. up.mu is
// held.
func addFrom(up *core.Upload, parts [][]byte, first, end int64) {
	skip, keep := up.Size-first, end-up.Size
	for _, p := range parts {
		if keep <= 0 {
			return
		}
		if skip >= int64(len(p)) {
			skip -= int64(len(p))
			continue
		}
		p = p[skip:]
		skip = 0
		if int64(len(p)) > keep {
			p = p[:keep]
		}
		up.AddUnchecked(p)
		keep -= int64(len(p))
	}
}
