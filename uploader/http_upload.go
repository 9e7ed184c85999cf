package uploader

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// oneShot sends r as one multipart upload: the object resource (with the
// checksums, so the service verifies them) and the media, streamed from the
// chunk. Preconditions go in the query.
func (t *httpTransport) oneShot(w *Writer, r *chunkRef) (*wire.Object, error) {
	spec := w.spec(r.Data, int64(len(r.Data)))
	meta := w.metadataJSON(spec, w.checksums())
	prefix, suffix := t.multipartBody(meta, spec.GetResource().GetContentType())
	u := t.uploadURL(w.bucket, w.query("multipart"))
	hdr := http.Header{"Content-Type": {"multipart/related; boundary=" + t.boundary}}
	for {
		body := w.bodyOver(prefix, []*chunkRef{r}, r.Offset, suffix)
		resp, cancel, err := w.do(http.MethodPost, u, body, body.size(), hdr)
		if err == nil {
			o, rerr := objectOf(resp)
			cancel()
			if rerr == nil {
				return o, nil
			}
			err = rerr
		}
		if err = w.retry.retry(w.ctx, "objects.insert", err, true, w.idempotent()); err != nil {
			return nil, w.target.err("objects.insert", err)
		}
	}
}

// objectOf reads the object a finished upload answered with, or the
// response's error; it closes the response.
func objectOf(resp *http.Response) (*wire.Object, error) {
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, statusError(resp)
	}
	return readObject(resp.Body)
}

// startSession starts a resumable upload: the object resource goes first,
// and the session URI comes back in Location.
func (t *httpTransport) startSession(w *Writer, first []byte) (uploadSession, error) {
	spec := w.spec(first, -1)
	meta := w.metadataJSON(spec, nil)
	u := t.uploadURL(w.bucket, w.query("resumable"))
	hdr := http.Header{"Content-Type": {"application/json; charset=UTF-8"}, "X-Upload-Content-Type": {spec.GetResource().GetContentType()}}
	for {
		body := w.bodyOver(meta, nil, 0, nil)
		resp, cancel, err := w.do(http.MethodPost, u, body, body.size(), hdr)
		if err == nil {
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
				err = statusError(resp)
			} else if loc == "" {
				err = status.Error(codes.Internal, errNoLocation.Error())
			}
			closeResponse(resp)
			cancel()
			if err == nil {
				w.retry.progress()
				return &httpSession{w: w, uri: loc, window: w.c.window(w.ch.ChunkSize())}, nil
			}
		}
		if err = w.retry.retry(w.ctx, "objects.insert", err, true, true); err != nil {
			return nil, w.target.err("objects.insert", err)
		}
	}
}

// httpSession is a resumable upload of the JSON API. It sends what it was
// pushed in PUTs of a window's worth of chunks, each answered by the
// persisted size (a 308 with Range). The JSON API takes one request of a
// session at a time, so one PUT runs on a goroutine of its own while the
// Writer fills the next window. After a failure it asks the session's status
// (Content-Range: bytes */*) and resends from the persisted offset. Chunks go
// back once persisted and once net/http closed the request body that read
// them.
type httpSession struct {
	w         *Writer
	uri       string
	window    int64
	pending   []*chunkRef // not persisted yet, in offset order
	persisted int64
	last      int64 // the end of the data pushed so far
	final     bool  // the last chunk was pushed
	checksums *wire.ObjectChecksums
	resource  *wire.Object
	closed    bool

	inflight chan putResult // the PUT running on its own goroutine, or nil
	sending  int64          // the end of the bytes that PUT sends
}

// putResult is the session's answer to a PUT.
type putResult struct {
	persisted int64
	resource  *wire.Object
	err       error
}

func (s *httpSession) push(r *chunkRef) error {
	s.pending = append(s.pending, r)
	s.last = r.end()
	if s.inflight == nil {
		if s.last-s.persisted >= s.window {
			s.launch()
		}
		return nil
	}
	if s.last-s.sending < s.window {
		return nil
	}
	// A window is ready while the previous one is on its way: wait for
	// it, then send the next.
	if err := s.collect(); err != nil {
		return err
	}
	if s.last-s.persisted >= s.window {
		s.launch()
	}
	return nil
}

// launch starts a PUT of everything from the persisted offset on its own
// goroutine.
func (s *httpSession) launch() {
	w := s.w
	body, hdr := s.request()
	n := body.size()
	timeout := w.retry.attemptTimeout()
	ch := make(chan putResult, 1)
	s.inflight, s.sending = ch, s.persisted+n
	go func() {
		resp, cancel, err := w.doWithin(timeout, http.MethodPut, s.uri, body, n, hdr)
		if err != nil {
			ch <- putResult{err: err}
			return
		}
		defer cancel()
		persisted, o, err := readAnswer(resp)
		ch <- putResult{persisted: persisted, resource: o, err: err}
	}()
}

// collect waits for the PUT in flight and takes in its answer; a failed one
// is resumed from the persisted offset, synchronously.
func (s *httpSession) collect() error {
	if s.inflight == nil {
		return nil
	}
	r := <-s.inflight
	s.inflight = nil
	err := r.err
	if err == nil {
		if r.resource != nil {
			s.resource = r.resource
		}
		if err = s.ack(r.persisted); err == nil {
			s.w.retry.progress()
			return nil
		}
	}
	return s.recoverFrom(err)
}

func (s *httpSession) flush() error {
	if err := s.collect(); err != nil {
		return err
	}
	if s.last <= s.persisted {
		return nil
	}
	return s.put()
}

func (s *httpSession) finish(r *chunkRef, checksums *wire.ObjectChecksums) (*wire.Object, error) {
	// The session owns r from here on, whatever happens next: close drops
	// the references of what is pending. Taken after the wait for the PUT
	// in flight, r would never go back if that PUT failed for good.
	s.pending = append(s.pending, r)
	if err := s.collect(); err != nil {
		return nil, err
	}
	s.last, s.final, s.checksums = r.end(), true, checksums
	if err := s.put(); err != nil {
		return nil, err
	}
	if s.resource == nil {
		return nil, s.w.target.err("objects.insert", status.Error(codes.Internal, "the service did not finish the upload"))
	}
	return s.resource, nil
}

// waitContext: nothing runs in the background, so nothing breaks while the
// Writer waits.
func (s *httpSession) waitContext() context.Context { return s.w.ctx }

func (s *httpSession) recover() error { return nil }

// put sends everything pushed and not persisted, synchronously, finishing
// the upload if the last chunk was pushed, and retries from the persisted
// offset.
func (s *httpSession) put() error {
	for s.persisted < s.last || (s.final && s.resource == nil) {
		if err := s.putOnce(); err != nil {
			if err := s.recoverFrom(err); err != nil {
				return err
			}
			continue
		}
		s.w.retry.progress()
	}
	return nil
}

// recoverFrom resumes after a failed PUT: backoff, then the session's
// status, until the retrier gives up.
func (s *httpSession) recoverFrom(err error) error {
	w := s.w
	op := "objects.insert"
	for {
		if err = w.retry.retry(w.ctx, op, err, true, true); err != nil {
			return w.target.err(op, err)
		}
		if err = s.query(); err == nil {
			w.ev.resumed(s.persisted, nil)
			return nil
		}
		op = "objects.insert (status)"
	}
}

// request builds a PUT of the bytes from the persisted offset to the end of
// what was pushed, with the last request's total and checksums.
func (s *httpSession) request() (*httpBody, http.Header) {
	body := s.w.bodyOver(nil, s.pending, s.persisted, nil)
	n := body.size()
	total := "*"
	if s.final {
		total = strconv.FormatInt(s.last, 10)
	}
	hdr := http.Header{}
	switch {
	case n == 0:
		hdr.Set("Content-Range", "bytes */"+total)
	default:
		hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%s", s.persisted, s.persisted+n-1, total))
	}
	if s.final && s.checksums != nil {
		if h := hashHeader(s.checksums); h != "" {
			hdr.Set("X-Goog-Hash", h)
		}
	}
	return body, hdr
}

// putOnce makes one PUT of the bytes from the persisted offset.
func (s *httpSession) putOnce() error {
	body, hdr := s.request()
	resp, cancel, err := s.w.do(http.MethodPut, s.uri, body, body.size(), hdr)
	if err != nil {
		return err
	}
	defer cancel()
	return s.answer(resp)
}

// query asks the session how much it persisted.
func (s *httpSession) query() error {
	total := "*"
	if s.final {
		total = strconv.FormatInt(s.last, 10)
	}
	resp, cancel, err := s.w.do(http.MethodPut, s.uri, nil, 0, http.Header{"Content-Range": {"bytes */" + total}})
	if err != nil {
		return err
	}
	defer cancel()
	return s.answer(resp)
}

// answer takes in the session's answer to a request.
func (s *httpSession) answer(resp *http.Response) error {
	persisted, o, err := readAnswer(resp)
	if err != nil {
		return err
	}
	if o != nil {
		s.resource = o
	}
	return s.ack(persisted)
}

// readAnswer reads a session's answer: 308 with the persisted range, or the
// finished object. It closes the response.
func readAnswer(resp *http.Response) (persisted int64, o *wire.Object, err error) {
	switch resp.StatusCode {
	case http.StatusPermanentRedirect:
		defer closeResponse(resp)
		if rg := resp.Header.Get("Range"); rg != "" {
			end, ok := parseRangeEnd(rg)
			if !ok {
				return 0, nil, status.Errorf(codes.Internal, "the service answered Range %q", rg)
			}
			persisted = end + 1
		}
		return persisted, nil, nil
	case http.StatusOK, http.StatusCreated:
		o, err := objectOf(resp)
		if err != nil {
			return 0, nil, err
		}
		return o.GetSize(), o, nil
	}
	defer closeResponse(resp)
	return 0, nil, statusError(resp)
}

// parseRangeEnd reads the last byte of "bytes=0-N".
func parseRangeEnd(rg string) (int64, bool) {
	v, ok := strings.CutPrefix(rg, "bytes=0-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

// ack releases the chunks the service persisted.
func (s *httpSession) ack(persisted int64) error {
	if persisted < s.persisted {
		return status.Errorf(codes.DataLoss, "the service reports %d bytes persisted, below the %d it had acknowledged", persisted, s.persisted)
	}
	if persisted > s.last {
		return status.Errorf(codes.Internal, "the service reports %d bytes persisted, more than the %d sent", persisted, s.last)
	}
	s.persisted = persisted
	i := 0
	for ; i < len(s.pending) && s.pending[i].end() <= persisted; i++ {
		s.pending[i].unref()
		s.pending[i] = nil
	}
	// Move the rest to the front, so appends keep reusing the array.
	n := copy(s.pending, s.pending[i:])
	clear(s.pending[n:])
	s.pending = s.pending[:n]
	if p := s.w.cfg.progress; p != nil {
		p(persisted)
	}
	return nil
}

// abort cancels the session, so the service drops what it received.
func (s *httpSession) abort(error) {
	if s.inflight != nil {
		// The upload's context ended or its Writer failed: the PUT in
		// flight ends with it, or runs out its attempt timeout.
		<-s.inflight
		s.inflight = nil
	}
	if s.resource != nil || s.uri == "" {
		return
	}
	w := s.w
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), w.retry.cfg.attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.uri, nil)
	if err != nil {
		return
	}
	if resp, err := w.c.httpTr.hc.Do(req); err == nil {
		closeResponse(resp)
	}
	s.uri = ""
}

func (s *httpSession) close() {
	if s.inflight != nil {
		<-s.inflight
		s.inflight = nil
	}
	if s.closed {
		return
	}
	s.closed = true
	for i, r := range s.pending {
		r.unref()
		s.pending[i] = nil
	}
	s.pending = nil
}
