package sink

import (
	"context"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/header"
)

// WithCapacity gives every bucket the write capacity cfg, as
// [github.com/objup/objup/fakes.WithCapacity] does for the fake, so that a
// benchmark sees a service that says no on either server: a one-shot write
// (a WriteObject or BidiWriteObject stream whose first message has a
// write_object_spec), StartResumableWrite, and with [WithCompose]
// ComposeObject and DeleteObject count as one write each; the later
// streams of a session and QueryWriteStatus do not. A refused write is
// answered with codes.ResourceExhausted (or codes.Unavailable for the
// share of 503), with the fake's messages, before any of its content is
// read. Without it the sink admits every write, at no cost.
func WithCapacity(cfg capacity.Config) Option {
	return optionFunc(func(c *config) { c.capacity = &cfg })
}

// CapacityStats returns the counts of the buckets' write capacity, per
// bucket and per tenant (the x-scope-orgid of the calls), as
// [github.com/objup/objup/fakes.Server.CapacityStats] does; nil for a sink
// without [WithCapacity].
func (k *Server) CapacityStats() []capacity.BucketStats {
	if k.limiter == nil {
		return nil
	}
	return k.limiter.Stats()
}

// admit counts one write of object to bucket by the call in ctx against
// the bucket's capacity, and returns the error to answer if it is refused.
// Without a capacity it returns nil at once. A name GCS refuses is not
// counted: the call answers that error itself.
func (k *Server) admit(ctx context.Context, bucket, object string) error {
	if k.limiter == nil {
		return nil
	}
	if api.CheckObjectName(object) != nil {
		return nil
	}
	return api.CapacityError(k.limiter.Admit(bucket, object, header.FromIncoming(ctx, header.TenantKey)), bucket, object)
}
