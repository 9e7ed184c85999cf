package fakes

import (
	"context"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// Short names of the gRPC methods, as [Call.Method] reports them and the
// fault rules take them.
const (
	MethodWriteObject          = "WriteObject"
	MethodBidiWriteObject      = "BidiWriteObject"
	MethodStartResumableWrite  = "StartResumableWrite"
	MethodQueryWriteStatus     = "QueryWriteStatus"
	MethodCancelResumableWrite = "CancelResumableWrite"
	MethodReadObject           = "ReadObject"
	MethodBidiReadObject       = "BidiReadObject"
	MethodGetObject            = "GetObject"
	MethodListObjects          = "ListObjects"
	MethodDeleteObject         = "DeleteObject"
	MethodUpdateObject         = "UpdateObject"
	MethodComposeObject        = "ComposeObject"
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
type callLog struct {
	mu     sync.Mutex
	size   int    // capacity of the ring
	ring   []Call // grows up to size, then wraps
	n      int    // calls added since the last reset
	counts map[countKey]int64
}

func (l *callLog) init(size int) {
	l.size = size
	l.counts = make(map[countKey]int64)
}

func (l *callLog) add(c *Call) {
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

// Calls returns a copy of the request log: the most recent calls that ended
// since the server started or since the last [Server.ResetCalls], at most
// the size set by [WithCallLog], oldest first. A call still running is not
// in it.
func (s *Server) Calls() []Call {
	l := &s.calls
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.size || l.size == 0 {
		return slices.Clone(l.ring)
	}
	i := l.n % l.size
	return append(slices.Clone(l.ring[i:]), l.ring[:i]...)
}

// CallCounts returns the number of calls that ended since the server started
// or since the last [Server.ResetCalls], per method, tenant and code, sorted
// by method, then tenant, then code. Unlike [Server.Calls] they count every
// call.
func (s *Server) CallCounts() []CallCount {
	l := &s.calls
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

// ResetCalls empties the request log and zeroes its counters.
func (s *Server) ResetCalls() {
	l := &s.calls
	l.mu.Lock()
	clear(l.ring)
	l.ring = l.ring[:0]
	l.n = 0
	clear(l.counts)
	l.mu.Unlock()
}

type callKey struct{}

// noteTarget records the bucket and object of the call running in ctx.
func noteTarget(ctx context.Context, bucket, object string) {
	if c, ok := ctx.Value(callKey{}).(*Call); ok {
		c.Bucket, c.Object = bucket, object
	}
}

// tenantOf returns the tenant of the call running in ctx.
func tenantOf(ctx context.Context) string {
	if c, ok := ctx.Value(callKey{}).(*Call); ok {
		return c.Tenant
	}
	return ""
}

func newCall(ctx context.Context, fullMethod string) (*Call, context.Context) {
	c := &Call{
		Method: shortMethod(fullMethod),
		// One key, read with metadata.ValueFromIncomingContext without
		// copying the rest of the incoming metadata.
		Tenant: header.FromIncoming(ctx, header.TenantKey),
	}
	return c, context.WithValue(ctx, callKey{}, c)
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c, ctx := newCall(ctx, info.FullMethod)
	var resp any
	ctx, err := s.authorizeGRPC(ctx, c.Method)
	if err == nil {
		err = s.faults.before(ctx, c.Method)
	}
	if err == nil {
		_, err = s.retryGRPC(ctx, c.Method, false)
	}
	if err == nil {
		resp, err = handler(ctx, req)
	} else {
		c.Bucket, c.Object = targetOf(req)
	}
	c.Code = status.Code(err)
	s.calls.add(c)
	return resp, err
}

func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c, ctx := newCall(ss.Context(), info.FullMethod)
	ctx, err := s.authorizeGRPC(ctx, c.Method)
	if err == nil {
		err = s.faults.before(ctx, c.Method)
	}
	var rc *retrytest.Call
	if err == nil {
		rc, err = s.retryGRPC(ctx, c.Method, true)
	}
	if err == nil {
		err = handler(srv, retrytest.Wrap(&callStream{ServerStream: ss, ctx: ctx}, rc))
	}
	c.Code = status.Code(err)
	s.calls.add(c)
	return err
}

// targetOf returns the bucket and object a unary request names, for calls
// that fail before their handler runs.
func targetOf(req any) (bucket, object string) {
	switch r := req.(type) {
	case interface {
		GetBucket() string
		GetObject() string
	}:
		bucket, object = r.GetBucket(), r.GetObject()
	case interface{ GetParent() string }:
		bucket = r.GetParent()
	case interface {
		GetWriteObjectSpec() *wire.WriteObjectSpec
	}:
		res := r.GetWriteObjectSpec().GetResource()
		bucket, object = res.GetBucket(), res.GetName()
	}
	if b, err := api.ParseBucket(bucket); err == nil {
		return b, object
	}
	return "", object
}

// callStream gives a stream handler the context that carries its Call.
type callStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *callStream) Context() context.Context { return c.ctx }
