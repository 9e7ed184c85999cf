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
// What the fake implements of the API is specified in the repository's
// docs/fake/retry-test.md.
package retrytest

import (
	"slices"
	"sync"
	"sync/atomic"
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
