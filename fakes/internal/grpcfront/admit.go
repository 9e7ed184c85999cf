package grpcfront

import (
	"context"

	"github.com/objup/objup/fakes/internal/calls"
)

// admitGRPC counts one write of object to bucket by the gRPC call in ctx
// against the bucket's capacity, and returns the error to answer if it is
// refused. Without a capacity it returns nil at once.
func (s *Server) admitGRPC(ctx context.Context, bucket, object string) error {
	if s.Limiter == nil {
		return nil
	}
	return s.Admit(bucket, object, calls.TenantOf(ctx))
}
