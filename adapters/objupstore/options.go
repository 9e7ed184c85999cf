package objupstore

import (
	"context"
	"net/http"

	"google.golang.org/api/option"

	"github.com/objup/objup/uploader"
)

// Option configures a Bucket made by NewBucket or NewBucketWithConfig.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options set.
type config struct {
	client      *uploader.Client
	clientOpts  []option.ClientOption
	tenant      func(context.Context) (string, bool)
	wrapReadsRT func(http.RoundTripper) http.RoundTripper
}

// WithClient makes the bucket upload through c, a client the caller made and
// closes after the bucket: one client (one buffer pool, one admission stage
// per bucket, one set of connections) can serve many buckets. The config's
// ServiceAccount, UseGRPC, GRPCConnPoolSize, ChunkSizeBytes and MaxRetries
// then apply to the reads only, and WithClientOptions is ignored.
func WithClient(c *uploader.Client) Option {
	return optionFunc(func(cfg *config) { cfg.client = c })
}

// WithClientOptions adds options to the uploader.Client the bucket makes for
// its uploads, after those the config implies, so they win: objup's own
// (uploader.WithPool for a memory ceiling, uploader.WithTenantLimits, ...)
// and google.golang.org/api's (option.WithEndpoint, ...).
func WithClientOptions(opts ...option.ClientOption) Option {
	return optionFunc(func(cfg *config) { cfg.clientOpts = append(cfg.clientOpts, opts...) })
}

// WithTenantFunc names the tenant of an upload from its context, for
// services that keep it elsewhere than objup's header chain (Cortex and
// Mimir: dskit's user.ExtractOrgID). When f reports a tenant, the upload
// carries it as header.WithTenant would; an invalid tenant fails the upload
// before anything is sent.
func WithTenantFunc(f func(ctx context.Context) (tenant string, ok bool)) Option {
	return optionFunc(func(cfg *config) { cfg.tenant = f })
}

// WithReadsRoundTripper wraps the HTTP transport of the reads (the stock
// provider's wrapRoundtripper), as Thanos and Mimir do for their metrics.
func WithReadsRoundTripper(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return optionFunc(func(cfg *config) { cfg.wrapReadsRT = wrap })
}
