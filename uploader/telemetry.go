package uploader

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader/internal/telemetry"
)

// The client's metrics, tracing and logging are package telemetry's; the
// options that configure them are here.

// Upload paths, the "path" attribute.
const (
	pathOneShot   = "one-shot"
	pathResumable = "resumable"
	pathParallel  = "parallel"
)

// WithMeterProvider makes the client record its metrics with mp instead of
// otel's global MeterProvider. Pass metric/noop's provider to turn metrics
// off.
func WithMeterProvider(mp metric.MeterProvider) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.MeterProvider = mp })
}

// WithTracerProvider makes the client trace uploads with tp instead of otel's
// global TracerProvider. Pass trace/noop's provider to turn tracing off.
func WithTracerProvider(tp trace.TracerProvider) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.TracerProvider = tp })
}

// WithLogger makes the client log retries, resumes, waits for a buffer and
// buffers released by force to l, with the upload's bucket, object and
// tenant. nil (the default) logs nothing.
func WithLogger(l *slog.Logger) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.Logger = l })
}

// WithTenantAttribute adds the upload's tenant (header.Tenant of its
// context) to its metrics and span, as the attribute "objup.tenant" with the
// value f returns; f returning false leaves the attribute out for that
// tenant. Each distinct value is a time series of each metric: map many
// tenants to few values (a tier, a shard) if there are many. f must be safe
// for concurrent use. Without this option no tenant attribute is recorded.
func WithTenantAttribute(f func(tenant string) (value string, ok bool)) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.Tenant = f })
}

// uploadEvents is what one upload reports while it runs and when it ends
// (see package telemetry). The Writer owns it; the retrier, the session and
// the lifetime tracker report to it. newEvents makes one.
type uploadEvents = telemetry.Events[*eventScope]

// newEvents returns the events of the upload to t, started now, that adds
// its events to span (nil: none, until StartSpan).
func newEvents(t *target, span trace.Span) uploadEvents {
	return telemetry.NewEvents((*eventScope)(t), span)
}

// eventScope is an upload's target as its events see it (telemetry.Scope).
// It is a type of its own so that the methods telemetry needs are not
// promoted to the Writer, which embeds its target.
type eventScope target

// Context returns the upload's context.
func (t *eventScope) Context() context.Context { return t.ctx }

// Names returns the upload's bucket and object.
func (t *eventScope) Names() (bucket, object string) { return t.bucket, t.object }

// Telemetry returns the client's telemetry.
func (t *eventScope) Telemetry() *telemetry.Telemetry { return t.c.tel }
