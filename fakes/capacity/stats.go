package capacity

import (
	"slices"
	"strings"
)

// Counts counts a Limiter's decisions, by [Verdict].
type Counts struct {
	// Admitted counts the writes admitted.
	Admitted int64
	// RateLimited and Unavailable count the writes refused for the
	// bucket's rate, answered 429 and 503.
	RateLimited, Unavailable int64
	// ObjectRateLimited counts the writes refused for their object name's
	// rate.
	ObjectRateLimited int64
}

// Refused is the number of writes refused, for any reason.
func (c Counts) Refused() int64 { return c.RateLimited + c.Unavailable + c.ObjectRateLimited }

func (c *Counts) add(v Verdict) {
	switch v {
	case Admitted:
		c.Admitted++
	case RateLimited:
		c.RateLimited++
	case Unavailable:
		c.Unavailable++
	case ObjectRateLimited:
		c.ObjectRateLimited++
	}
}

// TenantStats are the counts of one tenant's writes to a bucket.
type TenantStats struct {
	// Tenant is the tenant the caller named ("" for none).
	Tenant string
	Counts
}

// BucketStats are a bucket's counts and its capacity now.
type BucketStats struct {
	// Bucket is the bucket's name.
	Bucket string
	// Rate and Burst are the bucket's write rate and burst as autoscaling
	// left them; 0 if the bucket's rate is not limited.
	Rate, Burst float64
	// Counts are the bucket's counts, all tenants together.
	Counts
	// Tenants are the counts per tenant, by tenant name.
	Tenants []TenantStats
}

// Stats returns the counts of every bucket written since the Limiter was
// made, by bucket name. A bucket without a capacity is not in it.
func (l *Limiter) Stats() []BucketStats {
	cur := *l.buckets.Load()
	out := make([]BucketStats, 0, len(cur))
	for name, st := range cur {
		st.mu.Lock()
		b := BucketStats{Bucket: name, Rate: st.rate, Burst: st.burst, Counts: st.total,
			Tenants: make([]TenantStats, 0, len(st.tenants))}
		for t, c := range st.tenants {
			b.Tenants = append(b.Tenants, TenantStats{Tenant: t, Counts: *c})
		}
		st.mu.Unlock()
		slices.SortFunc(b.Tenants, func(x, y TenantStats) int { return strings.Compare(x.Tenant, y.Tenant) })
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y BucketStats) int { return strings.Compare(x.Bucket, y.Bucket) })
	return out
}
