package fakes

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/grpcfront"
	"github.com/objup/objup/fakes/internal/httpfront"
	"google.golang.org/grpc/codes"
)

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
	calls.MustCode("FailCall", code)
	s.calls.Faults.AddFail(m, nth, code)
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
	calls.MustCode("BreakStream", code)
	s.calls.Faults.AddBreak(m, afterBytes, code)
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
	s.calls.Faults.AddCorrupt(m)
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
	s.calls.Faults.SetDelay(m, d)
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
	s.calls.Faults.AddLose(m)
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
	s.calls.Faults.AddRedirect(afterBytes, token)
}

// ClearFaults removes every fault rule, spent or not. Calls already past a
// rule are not affected.
func (s *Server) ClearFaults() {
	s.calls.Faults.Clear()
}

// faultMethods are the names the fault rules take, for mustMethod's message.
func faultMethods() []string {
	var out []string
	for _, r := range grpcfront.RPCs {
		if r.Faults {
			out = append(out, r.Name)
		}
	}
	return append(out, xmlFaultMethods("")...)
}

// xmlFaultMethods are the XML API methods that the fault rule op takes
// ("" for FailCall and Delay, which take them all), sorted.
func xmlFaultMethods(op string) []string {
	var out []string
	for m, x := range httpfront.XMLMethods {
		if strings.Contains(x.Ops, op) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// mustMethod returns the short name of method (short or full), and panics if
// it is not one the fault rules take, or not a write stream when writeOnly.
func mustMethod(op, method string, writeOnly bool) string {
	m := grpcfront.ShortMethod(method)
	if x, ok := httpfront.XMLMethods[m]; ok {
		if writeOnly && !strings.Contains(x.Ops, op) {
			panic(fmt.Sprintf("fakes: %s: method %q does not take it; the XML API methods that do: %s", op, method, strings.Join(xmlFaultMethods(op), ", ")))
		}
		return m
	}
	if writeOnly {
		if m != grpcfront.MethodWriteObject && m != grpcfront.MethodBidiWriteObject {
			panic(fmt.Sprintf("fakes: %s: method %q is not WriteObject or BidiWriteObject", op, method))
		}
		return m
	}
	if r := grpcfront.RPCNamed[m]; r == nil || !r.Faults {
		panic(fmt.Sprintf("fakes: %s: unknown method %q; want one of %s", op, method, strings.Join(faultMethods(), ", ")))
	}
	return m
}
