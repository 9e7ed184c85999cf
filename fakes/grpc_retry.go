package fakes

import (
	"context"

	"github.com/objup/objup/fakes/internal/retrytest"
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
