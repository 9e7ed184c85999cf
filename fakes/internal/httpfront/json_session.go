package httpfront

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

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
