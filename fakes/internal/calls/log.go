package calls

import (
	"context"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
)

// Call is one call as the request log records it: a gRPC call, or a
// request to the JSON API.
type Call struct {
	// Method is the short gRPC method name, e.g. "BidiWriteObject", or the
	// JSON API method, e.g. "objects.insert" (see the package
	// documentation for the list).
	Method string
	// Tenant is the last value of the x-scope-orgid request metadata (HTTP
	// header for the JSON API), or "" if the request had none.
	Tenant string
	// Bucket is the bare bucket name and Object the object name, when the
	// call got far enough to name them ("" otherwise; Object is "" for
	// listings and bucket calls).
	Bucket, Object string
	// Code is the status the call ended with; for the JSON API, the gRPC
	// code that matches its HTTP status.
	Code codes.Code
}

// CallCount is how many calls of one method, from one tenant, ended with
// one code.
type CallCount struct {
	Method string
	Tenant string
	Code   codes.Code
	Count  int64
}

type countKey struct {
	method, tenant string
	code           codes.Code
}

// callLog is the request log: a ring of the most recent calls and a counter
// per method, tenant and code. Recording a call is one short critical
// section (a copy into the ring and a map increment), on the goroutine that
// served the call, after it ended.
type CallLog struct {
	mu     sync.Mutex
	size   int    // capacity of the ring
	ring   []Call // grows up to size, then wraps
	n      int    // calls added since the last reset
	counts map[countKey]int64
}

func (l *CallLog) Init(size int) {
	l.size = size
	l.counts = make(map[countKey]int64)
}

func (l *CallLog) Add(c *Call) {
	l.mu.Lock()
	switch {
	case len(l.ring) < l.size:
		l.ring = append(l.ring, *c)
	case l.size > 0:
		l.ring[l.n%l.size] = *c
	}
	l.n++
	l.counts[countKey{c.Method, c.Tenant, c.Code}]++
	l.mu.Unlock()
}

type CallKey struct{}

// noteTarget records the bucket and object of the call running in ctx.
func NoteTarget(ctx context.Context, bucket, object string) {
	if c, ok := ctx.Value(CallKey{}).(*Call); ok {
		c.Bucket, c.Object = bucket, object
	}
}

// tenantOf returns the tenant of the call running in ctx.
func TenantOf(ctx context.Context) string {
	if c, ok := ctx.Value(CallKey{}).(*Call); ok {
		return c.Tenant
	}
	return ""
}

// snapshot is Server.Calls.
func (l *CallLog) Snapshot() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.size || l.size == 0 {
		return slices.Clone(l.ring)
	}
	i := l.n % l.size
	return append(slices.Clone(l.ring[i:]), l.ring[:i]...)
}

// countAll is Server.CallCounts.
func (l *CallLog) CountAll() []CallCount {
	l.mu.Lock()
	out := make([]CallCount, 0, len(l.counts))
	for k, n := range l.counts {
		out = append(out, CallCount{Method: k.method, Tenant: k.tenant, Code: k.code, Count: n})
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b CallCount) int {
		if c := strings.Compare(a.Method, b.Method); c != 0 {
			return c
		}
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return int(a.Code) - int(b.Code)
	})
	return out
}

// reset is Server.ResetCalls.
func (l *CallLog) Reset() {
	l.mu.Lock()
	clear(l.ring)
	l.ring = l.ring[:0]
	l.n = 0
	clear(l.counts)
	l.mu.Unlock()
}
