package retrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
)

// connClosedError is the error of a request whose connection the fake
// closed on purpose (a reset or a broken stream): nothing more is written
// to it, and the request log records codes.Unavailable.
type connClosedError struct{ msg string }

func (e *connClosedError) Error() string { return e.msg }

// GRPCStatus gives the request log its code.
func (e *connClosedError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.msg) }

// IsConnClosed reports whether err says the connection was closed on
// purpose, so that no error response can be written.
func IsConnClosed(err error) bool {
	var ce *connClosedError
	return errors.As(err, &ce)
}

// retryStatusError is the error a status instruction fails a request with.
func retryStatusError(id, raw string, in instruction) *store.Error {
	code, _ := grpcCode(in.status)
	reason := "retryTest"
	switch {
	case in.status == http.StatusTooManyRequests:
		reason = "rateLimitExceeded"
	case in.status >= 500:
		reason = "backendError"
	}
	return &store.Error{
		Kind: store.Kind{Code: code, HTTP: in.status, Reason: reason},
		Msg:  fmt.Sprintf("fakes: retry test %s: %s", id, raw),
	}
}

// Handler serves a JSON API request; an error is the request's answer.
type Handler = func(http.ResponseWriter, *http.Request) error

// HTTP applies the retry test that a request names in its x-retry-test-id
// header (Header), if the test runs over HTTP and has an instruction left
// for method, the request's retry test method name: it returns a handler
// that carries the instruction out around serve, or serve. A status
// instruction or a reset is consumed at once; the others when the request
// reaches the bytes they name, as in the testbench.
func (s *Tests) HTTP(r *http.Request, method string, serve Handler) Handler {
	if s.count.Load() == 0 || !s.methods[method].http {
		return serve
	}
	id := r.Header.Get(Header)
	if id == "" {
		return serve
	}
	in, ok := s.peek(id, method, transportHTTP)
	if !ok {
		return serve
	}
	raw := instructionText(in)
	take := func() bool { return s.take(id, method, in) }
	out := serve
	switch {
	case in.kind == instrStatus:
		if take() {
			out = func(http.ResponseWriter, *http.Request) error { return retryStatusError(id, raw, in) }
		}
	case in.kind == instrReset:
		if take() {
			out = func(w http.ResponseWriter, _ *http.Request) error {
				closeConn(w, true)
				return &connClosedError{fmt.Sprintf("fakes: retry test %s: %s", id, raw)}
			}
		}
	case in.kind == instrBroken:
		out = func(w http.ResponseWriter, r *http.Request) error {
			bw := &brokenWriter{ResponseWriter: w, left: in.bytes, take: take}
			err := serve(bw, r)
			if bw.broke {
				return &connClosedError{fmt.Sprintf("fakes: retry test %s: %s: the response broke after %d bytes", id, raw, in.bytes)}
			}
			return err
		}
	case method == "storage.objects.insert":
		out = s.retryUpload(id, raw, in, take, serve)
	case in.kind == instrStall:
		out = func(w http.ResponseWriter, r *http.Request) error {
			return serve(&stallWriter{ResponseWriter: w, s: s, ctx: r.Context(), left: in.bytes, d: in.stall, take: take}, r)
		}
	}
	return out
}

// retryUpload returns the handler of an upload request under an
// after-bytes instruction (return-N-after-MK, stall-for-Ss-after-MK), which
// applies to the content of uploads:
//
//   - to a chunk of a resumable session, as in the testbench: a chunk that
//     carries byte M is cut there, its first bytes are kept and the request
//     fails with status N; a chunk sent when the session already has M bytes
//     fails at once; a stall waits before the chunk is stored;
//   - to a single-shot upload (media or multipart, or a PUT of the XML
//     API: a simple upload or a multipart upload's part) whose
//     Content-Length is at least M bytes: it fails with nothing stored, or
//     waits first.
//
// Other requests, such as the start of a session or a status query, pass.
func (s *Tests) retryUpload(id, raw string, in instruction, take func() bool, serve Handler) Handler {
	fail := func() error { return retryStatusError(id, raw, instruction{kind: instrStatus, status: in.status}) }
	return func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		upID := q.Get("upload_id")
		if upID == "" {
			t := q.Get("uploadType")
			single := r.Method == http.MethodPost && (t == "media" || t == "multipart") || r.Method == http.MethodPut
			if !single || r.ContentLength < in.bytes {
				return serve(w, r)
			}
			if in.kind == instrStall {
				if take() {
					if err := s.wait(r.Context(), in.stall); err != nil {
						return err
					}
				}
				return serve(w, r)
			}
			if take() {
				return fail()
			}
			return serve(w, r)
		}
		if r.Method != http.MethodPut && r.Method != http.MethodPost {
			return serve(w, r)
		}
		cr, ok := s.host.Chunk(r, upID)
		if !ok {
			return serve(w, r)
		}
		persisted, done := cr.Persisted, cr.Done
		at := in.bytes
		if cr.Open && r.ContentLength < 0 && !done && cr.First <= min(persisted, at) {
			// The bytes of "bytes A-*/..." in a body of unknown length
			// run to its end: read as far as byte at, to learn whether
			// the request reaches it, and serve the body from there.
			r.Body, cr.Last = peekBody(r.Body, at+1-cr.First)
			cr.Last += cr.First - 1
		}
		switch {
		case done || cr.First > persisted:
			return serve(w, r) // the handler answers
		case in.kind == instrStall:
			if persisted <= at && cr.First <= at && at <= cr.Last && take() {
				if err := s.wait(r.Context(), in.stall); err != nil {
					return err
				}
			}
			return serve(w, r)
		case persisted >= at:
			if take() {
				return fail()
			}
			return serve(w, r)
		case at > cr.Last+1:
			return serve(w, r)
		}
		// The chunk carries byte at: store the bytes before it, as a chunk
		// of unknown total (so that it cannot complete the object), and
		// fail.
		n := at - cr.First
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(io.LimitReader(r.Body, n))
		r2.ContentLength = n
		r2.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", cr.First, at-1))
		if err := serve(discardWriter{http.Header{}}, r2); err != nil {
			return err
		}
		if take() {
			return fail()
		}
		return nil
	}
}

// peekBody reads up to n bytes of body and returns a body that reads them
// again, then the rest (or the error that ended body early), and how many
// it read.
func peekBody(body io.ReadCloser, n int64) (io.ReadCloser, int64) {
	buf := make([]byte, n)
	k := 0
	var err error
	for k < len(buf) && err == nil {
		var m int
		m, err = body.Read(buf[k:])
		k += m
	}
	rest := io.Reader(body)
	if err != nil {
		rest = errReader{err}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf[:k]), rest), body}, int64(k)
}

// errReader is a reader that fails with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// discardWriter is a ResponseWriter that drops the response.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}

// wait blocks for d, or until ctx ends or the server closes.
func (s *Tests) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-s.host.Stopping():
		return status.Error(codes.Unavailable, "fakes: server closing")
	}
}

// closeConn closes the request's connection: with a reset (RST) and
// nothing sent if reset, else after sending what the response holds so
// far, with a normal close, so that the client sees the response end early.
func closeConn(w http.ResponseWriter, reset bool) {
	rc := http.NewResponseController(w)
	if !reset {
		rc.Flush()
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return // not HTTP/1: the handler's error ends the response
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

// brokenWriter lets left bytes of the response body through, then closes
// the connection and fails every later write. take consumes the
// instruction when the break happens.
type brokenWriter struct {
	http.ResponseWriter
	left  int64
	take  func() bool
	broke bool
}

var errBroken = errors.New("fakes: the response was broken on purpose")

func (b *brokenWriter) Write(p []byte) (int, error) {
	if b.broke {
		return 0, errBroken
	}
	if int64(len(p)) < b.left {
		b.left -= int64(len(p))
		return b.ResponseWriter.Write(p)
	}
	n, err := b.ResponseWriter.Write(p[:b.left])
	if err != nil {
		return n, err
	}
	b.broke = true
	b.take()
	closeConn(b.ResponseWriter, false)
	return n, errBroken
}

// Unwrap lets http.ResponseController reach the connection.
func (b *brokenWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// stallWriter lets left bytes of the response body through, then waits d
// before it writes more.
type stallWriter struct {
	http.ResponseWriter
	s     *Tests
	ctx   context.Context
	left  int64
	d     time.Duration
	take  func() bool
	ended bool // the stall is over, or did not happen
}

func (sw *stallWriter) Write(p []byte) (int, error) {
	if sw.ended || int64(len(p)) <= sw.left {
		sw.left -= int64(len(p))
		return sw.ResponseWriter.Write(p)
	}
	n, err := sw.ResponseWriter.Write(p[:sw.left])
	if err != nil {
		return n, err
	}
	sw.ended = true
	if sw.take() {
		http.NewResponseController(sw.ResponseWriter).Flush()
		if err := sw.s.wait(sw.ctx, sw.d); err != nil {
			return n, err
		}
	}
	m, err := sw.ResponseWriter.Write(p[n:])
	return n + m, err
}

// Unwrap lets http.ResponseController reach the connection.
func (sw *stallWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }
