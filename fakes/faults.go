package fakes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// faults holds a server's fault rules. A server with no rules pays one atomic
// load per call.
type faults struct {
	armed atomic.Bool
	stop  chan struct{} // closed by Server.Close: delays end at once

	mu      sync.Mutex
	fail    []*failRule
	brk     map[string][]breakRule
	corrupt map[string]int
	delay   map[string]time.Duration
	lose    map[string]int
	redir   []redirectRule
}

type redirectRule struct {
	after int64
	token string
}

type failRule struct {
	method string
	nth    int
	seen   int
	code   codes.Code
}

type breakRule struct {
	after int64
	code  codes.Code
}

func (f *faults) lock() {
	f.mu.Lock()
	if f.brk == nil {
		f.brk = make(map[string][]breakRule)
		f.corrupt = make(map[string]int)
		f.delay = make(map[string]time.Duration)
		f.lose = make(map[string]int)
	}
}

func mustCode(op string, code codes.Code) {
	if code == codes.OK {
		panic(fmt.Sprintf("fakes: %s: code must not be OK", op))
	}
}

// FailCall makes the nth call of method fail with code, counting calls of
// method from now on (1 is the next call). The call fails before the server
// reads anything from it, and the rule is then spent. method is a short name
// such as "BidiWriteObject" (see the Method constants), a full one such as
// "/google.storage.v2.Storage/BidiWriteObject", or an XML API method such
// as "xml.multipart.uploadPart" (over HTTP, see xml_faults.go). Rules add up: FailCall(m, 1,
// c) twice fails the next call once; FailCall(m, 1, c) and FailCall(m, 2, c)
// fail the next two calls.
//
// FailCall panics if method is unknown, nth < 1 or code is codes.OK.
func (s *Server) FailCall(method string, nth int, code codes.Code) {
	m := mustMethod("FailCall", method, false)
	if nth < 1 {
		panic(fmt.Sprintf("fakes: FailCall: nth is %d; calls count from 1", nth))
	}
	mustCode("FailCall", code)
	f := &s.faults
	f.lock()
	f.fail = append(f.fail, &failRule{method: m, nth: nth, code: code})
	f.armed.Store(true)
	f.mu.Unlock()
}

// BreakStream makes the next stream of method (WriteObject or
// BidiWriteObject; over HTTP xml.objects.put or xml.multipart.uploadPart,
// whose connection is then closed) that starts from now on fail with code
// once it has received afterBytes bytes of object data. The message that
// reaches the limit is cut there: its first bytes up to the limit count as
// received (after the message's CRC32C, if any, was verified in full), the
// rest are dropped, and the stream ends with code. A resumable session
// keeps the bytes received before the break, so a client can ask
// QueryWriteStatus and resume;
// an appendable write keeps only the bytes it flushed before (the others
// are lost, as when a stream to GCS breaks); a one-shot write stores
// nothing. With afterBytes 0 the stream fails on its
// first message. Several calls queue up, one stream each.
//
// BreakStream panics if method is not a write stream, afterBytes < 0 or code
// is codes.OK.
func (s *Server) BreakStream(method string, afterBytes int64, code codes.Code) {
	m := mustMethod("BreakStream", method, true)
	if afterBytes < 0 {
		panic(fmt.Sprintf("fakes: BreakStream: afterBytes is %d", afterBytes))
	}
	mustCode("BreakStream", code)
	f := &s.faults
	f.lock()
	f.brk[m] = append(f.brk[m], breakRule{after: afterBytes, code: code})
	f.armed.Store(true)
	f.mu.Unlock()
}

// CorruptNext flips one byte of the next non-empty data message that a
// stream of method (WriteObject or BidiWriteObject; or the body of an XML
// API upload, as for BreakStream) receives, before the server checks it,
// as a bad network path or buffer reuse would. If the message carries a
// CRC32C the check fails with codes.DataLoss; if not, the corruption is
// caught at finish_write by the whole-object checksum, if the client sends
// one, or else it is stored. Several calls corrupt several
// messages.
//
// CorruptNext panics if method is not a write stream.
func (s *Server) CorruptNext(method string) {
	m := mustMethod("CorruptNext", method, true)
	f := &s.faults
	f.lock()
	f.corrupt[m]++
	f.armed.Store(true)
	f.mu.Unlock()
}

// Delay makes every call of method wait d before the server handles it, until
// [Server.ClearFaults] or Delay(method, 0). The wait ends early if the client
// gives up (the call fails with its context error), or if the server is
// closed (codes.Unavailable).
//
// Delay panics if method is unknown or d < 0.
func (s *Server) Delay(method string, d time.Duration) {
	m := mustMethod("Delay", method, false)
	if d < 0 {
		panic(fmt.Sprintf("fakes: Delay: negative duration %v", d))
	}
	f := &s.faults
	f.lock()
	if d == 0 {
		delete(f.delay, m)
	} else {
		f.delay[m] = d
		f.armed.Store(true)
	}
	f.mu.Unlock()
}

// LoseAnswer makes the next write of method (WriteObject or
// BidiWriteObject; over HTTP an XML API write, whose connection is closed
// instead of its answer) that finishes an object lose its answer: the
// object is stored, and the call fails with codes.Unavailable instead of
// returning it, as when the connection breaks after the service committed. Several
// calls lose several answers.
//
// LoseAnswer panics if method is not a write stream.
func (s *Server) LoseAnswer(method string) {
	m := mustMethod("LoseAnswer", method, true)
	f := &s.faults
	f.lock()
	f.lose[m]++
	f.armed.Store(true)
	f.mu.Unlock()
}

// RedirectAppend redirects the next appendable write stream that opens
// from now on (a BidiWriteObject whose first message creates an
// appendable object, or reopens an unfinalized one with
// append_object_spec) once it has received afterBytes bytes of object data,
// as GCS moves an appendable object's writes elsewhere: the message that
// reaches the limit is taken whole, then the stream fails, before that
// message's flush, state_lookup or finish_write, with codes.Aborted and a
// google.storage.v2.BidiWriteObjectRedirectedError detail that carries
// the routing token token, the writer's write handle and the object's
// generation. The bytes the stream sent and did not flush are lost: the
// object keeps its persisted size. The object's next stream must
// carry the token, as routing_token in its x-goog-request-params
// metadata ("routing_token=TOKEN") or in its append_object_spec, and may
// then resume with the handle (or take the object over); a stream
// without it is redirected again, at its first message. With afterBytes
// 0 the stream is redirected at its first message, after that message
// created or reopened the object. Several calls queue up, one stream each.
//
// RedirectAppend panics if afterBytes < 0 or token is empty.
func (s *Server) RedirectAppend(afterBytes int64, token string) {
	if afterBytes < 0 {
		panic(fmt.Sprintf("fakes: RedirectAppend: afterBytes is %d", afterBytes))
	}
	if token == "" {
		panic("fakes: RedirectAppend: empty routing token")
	}
	f := &s.faults
	f.lock()
	f.redir = append(f.redir, redirectRule{after: afterBytes, token: token})
	f.armed.Store(true)
	f.mu.Unlock()
}

// takeRedirect returns the RedirectAppend rule for a new appendable
// write stream, if any.
func (f *faults) takeRedirect() (redirectRule, bool) {
	if !f.armed.Load() {
		return redirectRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.redir) == 0 {
		return redirectRule{}, false
	}
	r := f.redir[0]
	f.redir = f.redir[1:]
	return r, true
}

// lost returns the error that replaces the answer of a finished write of
// method, if a LoseAnswer rule takes it, else nil.
func (f *faults) lost(method string) error {
	if !f.armed.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose[method] == 0 {
		return nil
	}
	f.lose[method]--
	return status.Errorf(codes.Unavailable, "fakes: the answer of %s was lost (the object is stored)", method)
}

// ClearFaults removes every fault rule, spent or not. Calls already past a
// rule are not affected.
func (s *Server) ClearFaults() {
	f := &s.faults
	f.mu.Lock()
	f.armed.Store(false)
	f.fail, f.brk, f.corrupt, f.delay, f.lose, f.redir = nil, nil, nil, nil, nil, nil
	f.mu.Unlock()
}

// before runs the call-level rules for a new call of method: the delay, then
// the count of FailCall rules. It returns the error the call must fail with,
// or nil.
func (f *faults) before(ctx context.Context, method string) error {
	if !f.armed.Load() {
		return nil
	}
	var err error
	f.mu.Lock()
	d := f.delay[method]
	kept := f.fail[:0]
	for _, r := range f.fail {
		if r.method == method {
			r.seen++
			if r.seen == r.nth {
				if err == nil {
					err = status.Errorf(r.code, "fakes: injected failure of call %d of %s", r.nth, method)
				}
				continue
			}
		}
		kept = append(kept, r)
	}
	clear(f.fail[len(kept):])
	f.fail = kept
	f.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-f.stop:
			t.Stop()
			return status.Error(codes.Unavailable, "fakes: server closing")
		}
	}
	return err
}

// takeBreak returns the BreakStream rule for a new stream of method, if any.
func (f *faults) takeBreak(method string) (breakRule, bool) {
	if !f.armed.Load() {
		return breakRule{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.brk[method]
	if len(q) == 0 {
		return breakRule{}, false
	}
	r := q[0]
	f.brk[method] = q[1:]
	return r, true
}

// takeCorrupt reports whether the data message at hand must be corrupted.
func (f *faults) takeCorrupt(method string) bool {
	if !f.armed.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.corrupt[method] == 0 {
		return false
	}
	f.corrupt[method]--
	return true
}
