package fakes

import (
	"context"
	"net/http"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/header"
)

// bucketCapacity is one WithCapacity or WithBucketCapacity option.
type bucketCapacity struct {
	all    bool
	bucket string
	cfg    capacity.Config
}

// newLimiter returns the limiter of the capacity options, nil if none.
func (c *config) newLimiter() (*capacity.Limiter, error) {
	if len(c.capacity) == 0 {
		return nil, nil
	}
	opts := make([]capacity.Option, 0, len(c.capacity)+1)
	for _, bc := range c.capacity {
		if bc.all {
			opts = append(opts, capacity.WithAllBuckets(bc.cfg))
		} else {
			opts = append(opts, capacity.WithBucket(bc.bucket, bc.cfg))
		}
	}
	if c.capacityClock != nil {
		opts = append(opts, capacity.WithClock(c.capacityClock))
	}
	return capacity.New(opts...)
}

// CapacityStats returns the counts of the buckets' write capacity: per
// bucket and per tenant, the writes admitted and those refused by each
// limit, and each bucket's rate as autoscaling left it. It is nil for a
// server without [WithCapacity] or [WithBucketCapacity].
func (s *Server) CapacityStats() []capacity.BucketStats {
	if s.limiter == nil {
		return nil
	}
	return s.limiter.Stats()
}

// admitGRPC counts one write of object to bucket by the gRPC call in ctx
// against the bucket's capacity, and returns the error to answer if it is
// refused. Without a capacity it returns nil at once.
func (s *Server) admitGRPC(ctx context.Context, bucket, object string) error {
	if s.limiter == nil {
		return nil
	}
	return s.admit(bucket, object, tenantOf(ctx))
}

// admitHTTP is admitGRPC for a JSON API request.
func (s *Server) admitHTTP(r *http.Request, bucket, object string) error {
	if s.limiter == nil {
		return nil
	}
	return s.admit(bucket, object, lastValue(r.Header, header.TenantKey))
}

// admit counts one write of object to bucket by tenant against the
// bucket's capacity. A write to a bucket that does not exist, or of a name
// GCS refuses, is not counted: the call answers that error itself.
func (s *Server) admit(bucket, object, tenant string) error {
	if s.limiter == nil {
		return nil
	}
	if _, err := s.store.Bucket(bucket); err != nil {
		return nil
	}
	if api.CheckObjectName(object) != nil {
		return nil
	}
	return api.CapacityError(s.limiter.Admit(bucket, object, tenant), bucket, object)
}
