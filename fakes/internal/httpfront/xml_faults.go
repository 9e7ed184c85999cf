package httpfront

import (
	"fmt"
	"io"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// cutError is the error of a call whose body a BreakStream rule cut.
type cutError struct {
	code codes.Code
	msg  string
}

func (e *cutError) Error() string { return e.msg }

// GRPCStatus gives the request log the rule's code.
func (e *cutError) GRPCStatus() *status.Status { return status.New(e.code, e.msg) }

// faultBody is a request body under a BreakStream or CorruptNext rule.
type faultBody struct {
	io.ReadCloser
	brk     bool  // a BreakStream rule applies
	left    int64 // with brk: the bytes to let through
	code    codes.Code
	corrupt bool // a CorruptNext rule applies to the next bytes read
	cut     *cutError
}

func (b *faultBody) Read(p []byte) (int, error) {
	if b.cut != nil {
		return 0, b.cut
	}
	if b.brk {
		if b.left == 0 && len(p) > 0 {
			b.cut = &cutError{b.code, fmt.Sprintf("fakes: injected break of the request body (BreakStream): %v", b.code)}
			return 0, b.cut
		}
		p = p[:min(int64(len(p)), b.left)]
	}
	n, err := b.ReadCloser.Read(p)
	if b.corrupt && n > 0 {
		p[0] ^= 0xff
		b.corrupt = false
	}
	b.left -= int64(n)
	return n, err
}

// loseWriter is the response of a call under a LoseAnswer rule: the
// answer of a success is not sent.
type loseWriter struct {
	http.ResponseWriter
	s      *Server
	method string
	lost   bool
}

func (lw *loseWriter) WriteHeader(st int) {
	if st < 300 && !lw.lost && lw.s.Faults.Lost(lw.method) != nil {
		lw.lost = true
		return
	}
	lw.ResponseWriter.WriteHeader(st)
}

func (lw *loseWriter) Write(p []byte) (int, error) {
	if lw.lost {
		return len(p), nil
	}
	return lw.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (lw *loseWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }

// httpFault is what the fault rules did to one XML API call.
type httpFault struct {
	body *faultBody
	lose *loseWriter
}

// xmlFaults applies the call-level fault rules to an XML API call of
// method (Delay, then FailCall: the error to answer), and wraps its body
// and its response for the rules that act on them. It costs one atomic
// load without rules.
func (s *Server) xmlFaults(w http.ResponseWriter, r *http.Request, method string) (http.ResponseWriter, *http.Request, *httpFault, error) {
	x, ok := XMLMethods[method]
	if !ok || !s.Faults.Armed.Load() {
		return w, r, nil, nil
	}
	if err := s.Faults.Before(r.Context(), method); err != nil {
		return w, r, nil, err
	}
	f := &httpFault{}
	if x.Ops != "" {
		f.lose = &loseWriter{ResponseWriter: w, s: s, method: method}
		w = f.lose
	}
	brk, hasBrk := s.Faults.TakeBreak(method)
	corrupt := s.Faults.TakeCorrupt(method)
	if hasBrk || corrupt {
		f.body = &faultBody{ReadCloser: r.Body, brk: hasBrk, left: brk.After, code: brk.Code, corrupt: corrupt}
		r.Body = f.body
	}
	return w, r, f, nil
}

// dropped returns the error to record for a call whose answer the rules
// took away (its body was cut, or its answer lost), and true; else err
// and false. f may be nil.
func (f *httpFault) dropped(err error) (error, bool) {
	switch {
	case f == nil:
		return err, false
	case f.body != nil && f.body.cut != nil:
		return f.body.cut, true
	case f.lose != nil && f.lose.lost:
		return status.Errorf(codes.Unavailable, "fakes: the answer of %s was lost (LoseAnswer)", f.lose.method), true
	}
	return err, false
}

// dropConn ends the request's connection without an answer: closed, over
// HTTP/1; over HTTP/2 the handler panics with http.ErrAbortHandler, which
// resets the stream.
func dropConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// The XML API's methods, as the request log names them, with the retry
// test method whose instructions each consumes and the fault rules each
// takes besides FailCall and Delay.
//
// The retry test names follow the routes of Google's storage testbench,
// which serves the XML API's GET of /BUCKET/OBJECT as storage.objects.get
// and its PUT and POST of /BUCKET/OBJECT as storage.objects.insert, and
// has no XML multipart upload of its own: so the list of a bucket's
// objects consumes the instructions of storage.objects.list, a PUT, an initiate, a part's
// upload and a complete consume the instructions of
// storage.objects.insert (return-N-after-MK fails a PUT or a part whose
// Content-Length reaches M KiB, with nothing stored, as a single-shot JSON
// upload), a list of parts those of storage.objects.get; an abort, a
// DELETE, those of storage.objects.delete (as the cancel of a JSON
// resumable session does), and the list of a bucket's uploads those of
// storage.objects.list.
//
// Over HTTP the fault rules act so: FailCall fails the call before it is
// served, with the HTTP status of its code and an XML error; Delay waits
// first; BreakStream lets the request's body through up to afterBytes,
// then the call fails with its code and the connection is closed without
// an answer (a body that ends before afterBytes is not broken), storing
// nothing; CorruptNext flips the body's first byte; LoseAnswer stores what
// the call stores and closes the connection instead of its answer (codes.
// Unavailable in the request log).
var XMLMethods = map[string]struct{ retry, Ops string }{
	"xml.objects.get":          {retry: "storage.objects.get"},
	"xml.objects.list":         {retry: "storage.objects.list"},
	"xml.objects.put":          {retry: "storage.objects.insert", Ops: "BreakStream CorruptNext LoseAnswer"},
	"xml.multipart.initiate":   {retry: "storage.objects.insert", Ops: "LoseAnswer"},
	"xml.multipart.uploadPart": {retry: "storage.objects.insert", Ops: "BreakStream CorruptNext LoseAnswer"},
	"xml.multipart.complete":   {retry: "storage.objects.insert", Ops: "LoseAnswer"},
	"xml.multipart.abort":      {retry: "storage.objects.delete", Ops: "LoseAnswer"},
	"xml.multipart.listParts":  {retry: "storage.objects.get"},
	"xml.multipart.list":       {retry: "storage.objects.list"},
}
