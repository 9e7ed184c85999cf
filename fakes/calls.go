package fakes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// Short names of the gRPC methods, as [Call.Method] reports them and the
// fault rules take them.
const (
	MethodWriteObject         = "WriteObject"
	MethodBidiWriteObject     = "BidiWriteObject"
	MethodStartResumableWrite = "StartResumableWrite"
	MethodQueryWriteStatus    = "QueryWriteStatus"
	MethodReadObject          = "ReadObject"
	MethodGetObject           = "GetObject"
	MethodListObjects         = "ListObjects"
	MethodDeleteObject        = "DeleteObject"
)

var methods = []string{
	MethodWriteObject, MethodBidiWriteObject, MethodStartResumableWrite, MethodQueryWriteStatus,
	MethodReadObject, MethodGetObject, MethodListObjects, MethodDeleteObject,
}

// shortMethod turns "/google.storage.v2.Storage/WriteObject" into
// "WriteObject".
func shortMethod(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// mustMethod returns the short name of method (short or full), and panics if
// it is not one the server implements, or not a write stream when writeOnly.
func mustMethod(op, method string, writeOnly bool) string {
	m := shortMethod(method)
	if writeOnly {
		if m != MethodWriteObject && m != MethodBidiWriteObject {
			panic(fmt.Sprintf("fakes: %s: method %q is not WriteObject or BidiWriteObject", op, method))
		}
		return m
	}
	if !slices.Contains(methods, m) {
		panic(fmt.Sprintf("fakes: %s: unknown method %q; want one of %s", op, method, strings.Join(methods, ", ")))
	}
	return m
}

// Call is one gRPC call as the request log records it.
type Call struct {
	// Method is the short method name, e.g. "BidiWriteObject".
	Method string
	// Tenant is the last value of the x-scope-orgid request metadata, or ""
	// if the request had none.
	Tenant string
	// Bucket is the bare bucket name and Object the object name, when the
	// call got far enough to name them ("" otherwise; Object is "" for
	// ListObjects).
	Bucket, Object string
	// Code is the status the call ended with.
	Code codes.Code
}

// callLog is the request log: a mutex-protected slice, appended to once per
// call after the call ended.
type callLog struct {
	mu    sync.Mutex
	calls []Call
}

func (l *callLog) add(c *Call) {
	l.mu.Lock()
	l.calls = append(l.calls, *c)
	l.mu.Unlock()
}

// Calls returns a copy of the request log: every gRPC call that ended since
// the server started or since the last [Server.ResetCalls], in the order they
// ended. A call still running is not in it.
func (s *Server) Calls() []Call {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return slices.Clone(s.calls.calls)
}

// ResetCalls empties the request log. Long benchmarks call it now and then to
// keep the log from growing.
func (s *Server) ResetCalls() {
	s.calls.mu.Lock()
	s.calls.calls = nil
	s.calls.mu.Unlock()
}

type callKey struct{}

// noteTarget records the bucket and object of the call running in ctx.
func noteTarget(ctx context.Context, bucket, object string) {
	if c, ok := ctx.Value(callKey{}).(*Call); ok {
		c.Bucket, c.Object = bucket, object
	}
}

func newCall(ctx context.Context, fullMethod string) (*Call, context.Context) {
	c := &Call{
		Method: shortMethod(fullMethod),
		// One key, read without copying the rest of the incoming metadata.
		Tenant: header.FromIncoming(ctx, header.TenantKey),
	}
	return c, context.WithValue(ctx, callKey{}, c)
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c, ctx := newCall(ctx, info.FullMethod)
	var resp any
	err := s.faults.before(ctx, c.Method)
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
	err := s.faults.before(ctx, c.Method)
	if err == nil {
		err = handler(srv, &callStream{ServerStream: ss, ctx: ctx})
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
	if b, err := parseBucket(bucket); err == nil {
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
