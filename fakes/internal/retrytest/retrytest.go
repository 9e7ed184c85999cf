// Package retrytest is the fake's retry test API, as Google's storage
// testbench serves it and its clients' retry conformance suites drive it:
// POST /retry_test registers instructions per JSON API method name
// ("return-503", "return-broken-stream", "return-503-after-256K", ...),
// and the calls that name the test in their x-retry-test-id header or
// metadata carry them out, one each, in order.
//
// The server it runs in calls it through Tests: ServeAPI for the API's
// own requests, HTTP for a JSON API request, GRPC, Wrap and CallOf for a
// gRPC call. It calls the server back through the small Host interface.
// See the fakes package documentation for what the fake implements.
package retrytest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/httpcode"
)

// The retry test API, as Google's storage testbench serves it and its
// clients' retry conformance suites drive it. See the package
// documentation.
const (
	retryTestPath  = "/retry_test"
	retryTestsPath = "/retry_tests"
	// Header is the header (over gRPC, the metadata key) that names the
	// test a call runs under.
	Header = "x-retry-test-id"

	// maxRetryTests bounds the tests a server keeps: creating one more
	// forgets the oldest.
	maxRetryTests = 4096
	// maxRetryTestBody bounds the body of POST /retry_test.
	maxRetryTestBody = 1 << 20
)

// Transports of a retry test: its instructions apply only to requests that
// arrive over it.
const (
	transportHTTP = "HTTP"
	transportGRPC = "GRPC"
)

// instrKind is a kind of retry test instruction.
type instrKind uint8

const (
	// instrStatus, "return-N": the call fails at once with HTTP status N
	// (over gRPC, the code the testbench maps N to).
	instrStatus instrKind = iota
	// instrReset, "return-reset-connection": over HTTP the server resets
	// the TCP connection; over gRPC the call fails with UNAVAILABLE.
	instrReset
	// instrBroken, "return-broken-stream" (after 4 bytes) and
	// "return-broken-stream-after-NK": the response stops after that many
	// bytes of content; over HTTP the connection is closed, over gRPC the
	// read fails with UNAVAILABLE.
	instrBroken
	// instrStatusAfter, "return-N-after-MK": an upload that reaches M KiB
	// keeps its first M KiB and fails with status N.
	instrStatusAfter
	// instrStall, "stall-for-Ss-after-MK": the request or response waits S
	// seconds once M KiB have gone through.
	instrStall
	// instrRedirect, "redirect-send-token-T": a BidiWriteObject stream
	// fails once its first message is read, with codes.Aborted and a
	// BidiWriteObjectRedirectedError that carries the routing token T.
	instrRedirect
	// instrRedirectHandle, "redirect-send-handle-and-token-T": an
	// appendable write fails as soon as its first message opened the
	// object (before its data), with codes.Aborted and a
	// BidiWriteObjectRedirectedError that carries T, the write handle and
	// the generation.
	instrRedirectHandle
	// instrExpectToken, "redirect-expect-token-T": consumed by a
	// BidiWriteObject call whose x-goog-request-params carry
	// routing_token=T; a call without it leaves it in place.
	instrExpectToken
)

// instruction is one parsed retry test instruction.
type instruction struct {
	kind   instrKind
	status int           // instrStatus, instrStatusAfter: the HTTP status
	bytes  int64         // instrBroken, instrStatusAfter, instrStall
	stall  time.Duration // instrStall
	token  string        // the redirect instructions' routing token
	seq    int           // its position among the test's instructions
}

var (
	reStatus      = regexp.MustCompile(`^return-([0-9]{3})$`)
	reStatusAfter = regexp.MustCompile(`^return-([0-9]{3})-after-([0-9]+)K$`)
	reBrokenAfter = regexp.MustCompile(`^return-broken-stream-after-([0-9]+)K$`)
	reStall       = regexp.MustCompile(`^stall-for-([0-9]+)s-after-([0-9]+)K$`)
	reRedirect    = regexp.MustCompile(`^redirect-send-token-([a-z-]+)$`)
	reRedirectH   = regexp.MustCompile(`^redirect-send-handle-and-token-([a-z-]+)$`)
	reExpectToken = regexp.MustCompile(`^redirect-expect-token-([a-z-]+)$`)
	// Instructions the testbench knows and the fake does not implement,
	// for features the fake does not have.
	reUnsupported = regexp.MustCompile(`^(return-broken-stream-final-chunk-after-[0-9]+B|return-[0-9]+-if-dp-enforced|return-unreachable-buckets-.*)$`)
)

// brokenStreamBytes is how much a plain "return-broken-stream" lets
// through, as in the testbench.
const brokenStreamBytes = 4

// maxStall bounds the stall an instruction may ask for.
const maxStall = 10 * time.Minute

// parseInstruction parses one instruction. An instruction the testbench
// knows but the fake does not implement is a kindUnimplemented error, any
// other it cannot parse a kindInvalid one.
func parseInstruction(s string) (instruction, error) {
	switch {
	case s == "return-reset-connection":
		return instruction{kind: instrReset}, nil
	case s == "return-broken-stream":
		return instruction{kind: instrBroken, bytes: brokenStreamBytes}, nil
	}
	if m := reStatus.FindStringSubmatch(s); m != nil {
		st, _ := strconv.Atoi(m[1])
		if st < 400 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: the status must be 400 or above", s)
		}
		return instruction{kind: instrStatus, status: st}, nil
	}
	if m := reStatusAfter.FindStringSubmatch(s); m != nil {
		st, _ := strconv.Atoi(m[1])
		kib, err := strconv.ParseInt(m[2], 10, 32)
		if st < 400 || err != nil || kib == 0 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want a status of 400 or above after 1 KiB or more", s)
		}
		return instruction{kind: instrStatusAfter, status: st, bytes: kib << 10}, nil
	}
	if m := reBrokenAfter.FindStringSubmatch(s); m != nil {
		kib, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || kib == 0 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want 1 KiB or more", s)
		}
		return instruction{kind: instrBroken, bytes: kib << 10}, nil
	}
	if m := reStall.FindStringSubmatch(s); m != nil {
		sec, err1 := strconv.ParseInt(m[1], 10, 32)
		kib, err2 := strconv.ParseInt(m[2], 10, 32)
		d := time.Duration(sec) * time.Second
		if err1 != nil || err2 != nil || d > maxStall {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want at most %v after at most 2^31 KiB", s, maxStall)
		}
		return instruction{kind: instrStall, bytes: kib << 10, stall: d}, nil
	}
	for _, r := range []struct {
		re   *regexp.Regexp
		kind instrKind
	}{{reRedirect, instrRedirect}, {reRedirectH, instrRedirectHandle}, {reExpectToken, instrExpectToken}} {
		if m := r.re.FindStringSubmatch(s); m != nil {
			return instruction{kind: r.kind, token: m[1]}, nil
		}
	}
	if reUnsupported.MatchString(s) {
		return instruction{}, store.Errorf(store.KindUnimplemented, "fakes: retry test instruction %q is not implemented by the fake", s)
	}
	return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q is not one the retry test API knows", s)
}

// instructionText is how error messages name an instruction.
func instructionText(in instruction) string {
	switch in.kind {
	case instrStatus:
		return fmt.Sprintf("return-%d", in.status)
	case instrReset:
		return "return-reset-connection"
	case instrBroken:
		return fmt.Sprintf("return-broken-stream after %d bytes", in.bytes)
	case instrStatusAfter:
		return fmt.Sprintf("return-%d-after-%dK", in.status, in.bytes>>10)
	case instrRedirect:
		return "redirect-send-token-" + in.token
	case instrRedirectHandle:
		return "redirect-send-handle-and-token-" + in.token
	case instrExpectToken:
		return "redirect-expect-token-" + in.token
	}
	return fmt.Sprintf("stall-for-%ds-after-%dK", int64(in.stall/time.Second), in.bytes>>10)
}

// grpcCode is the gRPC code a status instruction fails a gRPC call with:
// httpcode.Answer's, except 408, which the testbench maps to Unavailable;
// false for a status with no gRPC equivalent.
func grpcCode(httpStatus int) (codes.Code, bool) {
	if httpStatus == http.StatusRequestTimeout { // the testbench's choice, pending a better one
		return codes.Unavailable, true
	}
	return httpcode.Answer(httpStatus)
}

// retryMethod says over which transports the fake serves a JSON API method
// name of the retry test API, and which instruction kinds apply to it.
type retryMethod struct {
	http, grpc bool
	insert     bool // uploads: the after-bytes and stall instructions apply
	read       bool // reads: broken streams apply over gRPC
}

// newMethods returns the method names the retry test API knows: those of
// the testbench. The fake serves all of them over HTTP but
// storage.objects.restore, and over gRPC those of grpc.
func newMethods(grpc []string) map[string]retryMethod {
	m := map[string]retryMethod{
		"storage.objects.delete":  {http: true, grpc: true},
		"storage.objects.get":     {http: true, grpc: true, read: true},
		"storage.objects.insert":  {http: true, grpc: true, insert: true},
		"storage.objects.list":    {http: true, grpc: true},
		"storage.objects.patch":   {http: true, grpc: true},
		"storage.objects.compose": {http: true, grpc: true},
		"storage.objects.restore": {},
	}
	for _, name := range []string{
		"storage.buckets.delete", "storage.buckets.get", "storage.buckets.insert", "storage.buckets.list",
		"storage.buckets.patch", "storage.buckets.update", "storage.buckets.getIamPolicy",
		"storage.buckets.setIamPolicy", "storage.buckets.testIamPermissions",
		"storage.buckets.lockRetentionPolicy",
		"storage.objects.update", "storage.objects.copy", "storage.objects.rewrite",
		"storage.notifications.list", "storage.notifications.insert", "storage.notifications.get",
		"storage.notifications.delete",
		"storage.hmacKey.create", "storage.hmacKey.delete", "storage.hmacKey.get", "storage.hmacKey.list",
		"storage.hmacKey.update",
		"storage.serviceaccount.get",
	} {
		m[name] = retryMethod{http: true}
	}
	for _, res := range []string{"bucket_acl", "default_object_acl", "object_acl"} {
		for _, verb := range []string{"list", "insert", "get", "update", "patch", "delete"} {
			m["storage."+res+"."+verb] = retryMethod{http: true}
		}
	}
	for _, name := range grpc {
		rm := m[name]
		rm.grpc = true
		m[name] = rm
	}
	return m
}

// retryTest is one test of the retry test API: per method, the
// instructions not consumed yet.
type retryTest struct {
	id        string
	transport string
	raw       map[string][]string // as given, for GET
	pending   map[string][]instruction
	completed bool
}

// Tests is a server's registry of retry tests. A server with no test pays
// one atomic load per request (Active).
type Tests struct {
	host    Host
	methods map[string]retryMethod

	count atomic.Int64 // tests registered

	mu    sync.Mutex
	tests map[string]*retryTest
	order []string // IDs, oldest first
}

// retryTestJSON is the resource of a retry test.
type retryTestJSON struct {
	ID           string              `json:"id"`
	Instructions map[string][]string `json:"instructions"`
	Completed    bool                `json:"completed"`
	Transport    string              `json:"transport"`
}

func (t *retryTest) resource() *retryTestJSON {
	out := &retryTestJSON{ID: t.id, Instructions: make(map[string][]string, len(t.raw)), Completed: t.completed, Transport: t.transport}
	for m, list := range t.raw {
		out.Instructions[m] = slices.Clone(list)
	}
	return out
}

// add registers a test and returns its resource.
func (r *Tests) add(t *retryTest) *retryTestJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tests == nil {
		r.tests = make(map[string]*retryTest)
	}
	for len(r.order) >= maxRetryTests {
		delete(r.tests, r.order[0])
		r.order = r.order[1:]
	}
	r.tests[t.id] = t
	r.order = append(r.order, t.id)
	r.count.Store(int64(len(r.tests)))
	return t.resource()
}

// get returns the resource of test id, or nil.
func (r *Tests) get(id string) *retryTestJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tests[id]; t != nil {
		return t.resource()
	}
	return nil
}

// list returns the resources of every test, oldest first.
func (r *Tests) list() []*retryTestJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*retryTestJSON, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.tests[id].resource())
	}
	return out
}

// remove forgets test id and reports whether it existed.
func (r *Tests) remove(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tests[id] == nil {
		return false
	}
	delete(r.tests, id)
	r.order = slices.DeleteFunc(r.order, func(s string) bool { return s == id })
	r.count.Store(int64(len(r.tests)))
	return true
}

// peek returns the next instruction of test id for method, if the test
// exists, runs over transport and has one left.
func (r *Tests) peek(id, method, transport string) (instruction, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tests[id]
	if t == nil || t.transport != transport || len(t.pending[method]) == 0 {
		return instruction{}, false
	}
	return t.pending[method][0], true
}

// take consumes the next instruction of test id for method if it is still
// want (a request of the same test may have consumed it meanwhile), and
// reports whether it did. The test is completed once nothing is left.
func (r *Tests) take(id, method string, want instruction) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tests[id]
	if t == nil || len(t.pending[method]) == 0 || t.pending[method][0] != want {
		return false
	}
	t.pending[method] = t.pending[method][1:]
	t.raw[method] = t.raw[method][1:]
	left := 0
	for _, p := range t.pending {
		left += len(p)
	}
	t.completed = left == 0
	return true
}

// newRetryTest validates a POST /retry_test body and returns its test.
func (r *Tests) newRetryTest(body []byte) (*retryTest, error) {
	var in struct {
		Instructions map[string][]string `json:"instructions"`
		Transport    string              `json:"transport"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, store.Errorf(store.KindInvalid, "fakes: the retry test is not a JSON object: %v", err)
	}
	if len(in.Instructions) == 0 {
		return nil, store.Errorf(store.KindInvalid, "fakes: instructions is not defined")
	}
	tr := strings.ToUpper(in.Transport)
	switch tr {
	case "":
		tr = transportHTTP
	case transportHTTP, transportGRPC:
	default:
		return nil, store.Errorf(store.KindInvalid, "fakes: the requested transport %q is not HTTP or GRPC", in.Transport)
	}
	t := &retryTest{transport: tr, raw: make(map[string][]string), pending: make(map[string][]instruction)}
	for _, name := range slices.Sorted(maps.Keys(in.Instructions)) {
		list := in.Instructions[name]
		if err := r.checkRetryMethod(name, tr); err != nil {
			return nil, err
		}
		for _, s := range list {
			ins, err := parseInstruction(s)
			if err == nil {
				err = r.checkInstruction(name, tr, s, ins)
			}
			if err != nil {
				return nil, err
			}
			ins.seq = len(t.pending[name])
			t.pending[name] = append(t.pending[name], ins)
		}
		t.raw[name] = slices.Clone(list)
	}
	t.completed = func() bool {
		for _, p := range t.pending {
			if len(p) > 0 {
				return false
			}
		}
		return true
	}()
	t.id = newRetryTestID()
	return t, nil
}

// checkRetryMethod reports whether the fake serves method over transport:
// an unknown method is invalid, one the fake does not serve unimplemented,
// with a message that names it.
func (r *Tests) checkRetryMethod(name, transport string) error {
	m, ok := r.methods[name]
	switch {
	case !ok:
		return store.Errorf(store.KindInvalid, "fakes: the requested method %q for fault injection is not one the retry test API knows", name)
	case transport == transportHTTP && !m.http, transport == transportGRPC && !m.grpc:
		return store.Errorf(store.KindUnimplemented, "fakes: retry test: method %s is not implemented by the fake over %s", name, transport)
	}
	return nil
}

// checkInstruction reports whether the fake can carry out instruction s,
// parsed as in, on method over transport.
func (r *Tests) checkInstruction(name, transport, s string, in instruction) error {
	m := r.methods[name]
	unsupported := func(why string) error {
		return store.Errorf(store.KindUnimplemented, "fakes: retry test instruction %q on %s over %s is not implemented by the fake: %s", s, name, transport, why)
	}
	switch in.kind {
	case instrStatus:
		if _, ok := grpcCode(in.status); transport == transportGRPC && !ok {
			return store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: status %d has no gRPC equivalent", s, in.status)
		}
	case instrStatusAfter:
		if !m.insert {
			return unsupported("it applies to uploads (storage.objects.insert)")
		}
		if _, ok := grpcCode(in.status); transport == transportGRPC && !ok {
			return store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: status %d has no gRPC equivalent", s, in.status)
		}
	case instrBroken:
		if transport == transportGRPC && !m.read {
			return unsupported("over gRPC it applies to reads (storage.objects.get)")
		}
	case instrStall:
		if transport == transportGRPC {
			return unsupported("stalls apply over HTTP")
		}
	case instrRedirect, instrRedirectHandle, instrExpectToken:
		if transport != transportGRPC || name != "storage.objects.insert" {
			return unsupported("redirects apply to BidiWriteObject (storage.objects.insert) over gRPC")
		}
	}
	return nil
}

func newRetryTestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// IsPath reports whether an escaped path belongs to the retry test API.
func IsPath(path string) bool {
	return path == retryTestPath || path == retryTestsPath || strings.HasPrefix(path, retryTestPath+"/")
}

// ServeAPI serves the retry test API at path (IsPath): POST /retry_test
// creates a test, GET and DELETE /retry_test/ID read and remove one, GET
// /retry_tests lists them.
func (s *Tests) ServeAPI(w http.ResponseWriter, r *http.Request, path string) {
	fail := func(err error) { s.host.WriteError(w, err) }
	writeJSON := s.host.WriteJSON
	switch {
	case path == retryTestsPath && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"retry_test": s.list()})
	case path == retryTestPath && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRetryTestBody))
		if err != nil {
			fail(store.Errorf(store.KindInvalid, "fakes: reading the retry test: %v", err))
			return
		}
		t, err := s.newRetryTest(body)
		if err != nil {
			fail(err)
			return
		}
		writeJSON(w, http.StatusOK, s.add(t))
	case strings.HasPrefix(path, retryTestPath+"/"):
		id := strings.TrimPrefix(path, retryTestPath+"/")
		switch r.Method {
		case http.MethodGet:
			if t := s.get(id); t != nil {
				writeJSON(w, http.StatusOK, t)
				return
			}
		case http.MethodDelete:
			if s.remove(id) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintf(w, "Deleted %s", id)
				return
			}
		default:
			fail(store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use GET or DELETE", r.Method, path))
			return
		}
		fail(store.Errorf(store.KindNotFound, "fakes: retry test %q not found", id))
	default:
		fail(store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use POST %s, GET or DELETE %s/ID, or GET %s", r.Method, path, retryTestPath, retryTestPath, retryTestsPath))
	}
}
