package grpcfront

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
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

func newCall(ctx context.Context, fullMethod string) (*calls.Call, context.Context) {
	c := &calls.Call{
		Method: ShortMethod(fullMethod),
		// One key, read with metadata.ValueFromIncomingContext without
		// copying the rest of the incoming metadata.
		Tenant: header.FromIncoming(ctx, header.TenantKey),
	}
	return c, context.WithValue(ctx, calls.CallKey{}, c)
}

func (s *Server) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c, ctx := newCall(ctx, info.FullMethod)
	var resp any
	ctx, err := s.authorizeGRPC(ctx, c.Method)
	if err == nil {
		err = s.Faults.Before(ctx, c.Method)
	}
	if err == nil {
		_, err = s.retryGRPC(ctx, c.Method, false)
	}
	if err == nil {
		resp, err = handler(ctx, req)
	} else {
		c.Bucket, c.Object = TargetOf(req)
	}
	c.Code = status.Code(err)
	s.Log.Add(c)
	return resp, err
}

func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c, ctx := newCall(ss.Context(), info.FullMethod)
	ctx, err := s.authorizeGRPC(ctx, c.Method)
	if err == nil {
		err = s.Faults.Before(ctx, c.Method)
	}
	var rc *retrytest.Call
	if err == nil {
		rc, err = s.retryGRPC(ctx, c.Method, true)
	}
	if err == nil {
		err = handler(srv, retrytest.Wrap(&callStream{ServerStream: ss, ctx: ctx}, rc))
	}
	c.Code = status.Code(err)
	s.Log.Add(c)
	return err
}

// targetOf returns the bucket and object a unary request names, for calls
// that fail before their handler runs.
func TargetOf(req any) (bucket, object string) {
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
