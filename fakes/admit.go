package fakes

import (
	"github.com/objup/objup/fakes/capacity"
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
	if s.core.Limiter == nil {
		return nil
	}
	return s.core.Limiter.Stats()
}
