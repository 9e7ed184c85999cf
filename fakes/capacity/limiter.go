package capacity

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Verdict is a [Limiter]'s decision about one write.
type Verdict uint8

const (
	// Admitted: the write may go ahead.
	Admitted Verdict = iota
	// RateLimited: the bucket is over its rate. GCS answers HTTP 429
	// (rateLimitExceeded) or gRPC RESOURCE_EXHAUSTED.
	RateLimited
	// Unavailable: the bucket is over its rate, and this refusal falls in
	// the Config's Share503. GCS answers HTTP 503 (backendError) or gRPC
	// UNAVAILABLE.
	Unavailable
	// ObjectRateLimited: the object name is over its own rate. GCS answers
	// 429 or RESOURCE_EXHAUSTED, with a message that names the object.
	ObjectRateLimited
)

// String returns the verdict's name, e.g. "RateLimited".
func (v Verdict) String() string {
	switch v {
	case Admitted:
		return "Admitted"
	case RateLimited:
		return "RateLimited"
	case Unavailable:
		return "Unavailable"
	case ObjectRateLimited:
		return "ObjectRateLimited"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Option configures [New].
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	all    *Config
	bucket map[string]Config
	now    func() time.Time
}

// WithAllBuckets gives every bucket that [WithBucket] does not name the
// capacity cfg. Without it, such buckets are not limited.
func WithAllBuckets(cfg Config) Option {
	return optionFunc(func(o *options) { o.all = &cfg })
}

// WithBucket gives the bucket name the capacity cfg, in place of the one
// of [WithAllBuckets]. Naming a bucket again replaces its Config.
func WithBucket(name string, cfg Config) Option {
	return optionFunc(func(o *options) {
		if o.bucket == nil {
			o.bucket = make(map[string]Config)
		}
		o.bucket[name] = cfg
	})
}

// WithClock makes the Limiter read the time from now rather than
// time.Now, so that a test moves time itself. now must be safe for
// concurrent use; a time earlier than one it returned before counts as no
// time passed.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(o *options) { o.now = now })
}

// Limiter decides which object writes each bucket admits, as [Config]
// describes, and counts its decisions. Create it with [New]; the zero
// value is not usable. All methods are safe for concurrent use.
type Limiter struct {
	now   func() time.Time
	epoch time.Time // times are kept as durations since epoch
	all   *limits   // nil: buckets not in per are not limited
	per   map[string]limits

	mu      sync.Mutex                        // serializes the creation of bucket states
	buckets atomic.Pointer[map[string]*state] // copied on write: read without a lock
}

// New returns a Limiter for the capacities its options give. It validates
// every Config and returns one error for all their problems.
func New(opts ...Option) (*Limiter, error) {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	var errs []string
	l := &Limiter{now: o.now, per: make(map[string]limits, len(o.bucket))}
	if l.now == nil {
		l.now = time.Now
	}
	if o.all != nil {
		if err := o.all.Validate(); err != nil {
			errs = append(errs, "every bucket: "+err.Error())
		}
		lim := o.all.limits()
		l.all = &lim
	}
	for name, cfg := range o.bucket {
		if err := cfg.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("bucket %q: %v", name, err))
		}
		l.per[name] = cfg.limits()
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	l.epoch = l.now()
	l.buckets.Store(&map[string]*state{})
	return l, nil
}

// Admit decides whether the bucket admits one write of the object by
// tenant, and counts the decision. A write admitted takes one token of the
// bucket's and one of the name's; a write refused takes none. A bucket
// without a capacity admits every write, and is not counted.
func (l *Limiter) Admit(bucket, object, tenant string) Verdict {
	st := (*l.buckets.Load())[bucket]
	if st == nil {
		if st = l.create(bucket); st == nil {
			return Admitted
		}
	}
	return st.admit(l.now().Sub(l.epoch), object, tenant)
}

// create returns the state of bucket, made on its first write, or nil if
// the bucket has no capacity.
func (l *Limiter) create(bucket string) *state {
	lim, ok := l.per[bucket]
	if !ok {
		if l.all == nil {
			return nil
		}
		lim = *l.all
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := *l.buckets.Load()
	if st := cur[bucket]; st != nil {
		return st
	}
	st := newState(lim, l.now().Sub(l.epoch))
	next := maps.Clone(cur)
	next[bucket] = st
	l.buckets.Store(&next)
	return st
}
