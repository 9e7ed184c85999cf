package grpcfront

import (
	"context"
	"slices"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/writes"
	"google.golang.org/protobuf/types/known/emptypb"
)

// retryGRPC applies the retry test a gRPC call names (retrytest.Tests.GRPC)
// to the instructions of its method's retry test method (rpc.retry).
func (s *Server) retryGRPC(ctx context.Context, method string, stream bool) (*retrytest.Call, error) {
	if !s.Retry.Active() {
		return nil, nil
	}
	var name string
	if r := RPCNamed[method]; r != nil {
		name = r.Retry
	}
	return s.Retry.GRPC(ctx, name, method == MethodBidiWriteObject, stream)
}

// RetryMethods are the retry test methods the gRPC methods consume the
// instructions of (rpc.Retry), each once.
func RetryMethods() []string {
	var names []string
	for _, r := range RPCs {
		if r.Retry != "" && !slices.Contains(names, r.Retry) {
			names = append(names, r.Retry)
		}
	}
	return names
}

// RetryGRPC is the gRPC front's part of the retry test API's host
// (retrytest.Host): redirects, routing tokens, and the target a stream's
// first message names.
type RetryGRPC struct{ S *Server }

// Redirect returns an appendable write's redirect error.
func (h RetryGRPC) Redirect(msg, token string, handle []byte, gen int64) error {
	return writes.Redirect(msg, token, handle, gen)
}

// HasRoutingToken reports whether the call of ctx carries token.
func (h RetryGRPC) HasRoutingToken(ctx context.Context, token string) bool {
	return writes.HasRoutingToken(ctx, token)
}

// NoteTarget records the bucket and object that a stream's first message
// names, for the request log of a stream that fails on it.
func (h RetryGRPC) NoteTarget(ctx context.Context, m any) {
	switch r := m.(type) {
	case *emptypb.Empty: // BidiReadObject
		if spec, _, err := ParseBidiRead(r.ProtoReflect().GetUnknown()); err == nil && spec != nil {
			if b, err := api.ParseBucket(spec.Bucket); err == nil {
				calls.NoteTarget(ctx, b, spec.Object)
			}
		}
	case interface{ GetUploadId() string }:
		if id := r.GetUploadId(); id != "" {
			h.S.Session(ctx, id) // notes the session's object
			return
		}
		if b, o := TargetOf(m); b != "" {
			calls.NoteTarget(ctx, b, o)
		}
	default:
		if b, o := TargetOf(m); b != "" {
			calls.NoteTarget(ctx, b, o)
		}
	}
}
