package uploader

import (
	"context"
	"log/slog"

	"github.com/objup/objup/uploader/internal/xfer"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader/internal/telemetry"
)

// The client's metrics, tracing and logging are package telemetry's; the
// options that configure them are here.

// Telemetry configures the client's metrics, tracing and logging (see
// WithTelemetry). Zero fields keep their defaults.
type Telemetry struct {
	// MeterProvider records the client's metrics instead of otel's global
	// MeterProvider. Pass metric/noop's provider to turn metrics off.
	MeterProvider metric.MeterProvider
	// TracerProvider traces uploads instead of otel's global
	// TracerProvider. Pass trace/noop's provider to turn tracing off.
	TracerProvider trace.TracerProvider
	// Logger logs retries, resumes, waits for a buffer and buffers
	// released by force, with the upload's bucket, object and tenant. nil
	// (the default) logs nothing.
	Logger *slog.Logger
	// TenantAttribute adds the upload's tenant (header.Tenant of its
	// context) to its metrics and span, as the attribute "objup.tenant"
	// with the value it returns; returning false leaves the attribute out
	// for that tenant. Each distinct value is a time series of each
	// metric: map many tenants to few values (a tier, a shard) if there
	// are many. It must be safe for concurrent use. nil (the default)
	// records no tenant attribute.
	TenantAttribute func(tenant string) (value string, ok bool)
}

// WithTelemetry sets the client's metrics, tracing and logging (see
// Telemetry); its non-zero fields replace those of an earlier
// WithTelemetry.
func WithTelemetry(t Telemetry) option.ClientOption {
	return newClientOption(func(c *clientConfig) {
		tc := &c.telemetry
		if t.MeterProvider != nil {
			tc.MeterProvider = t.MeterProvider
		}
		if t.TracerProvider != nil {
			tc.TracerProvider = t.TracerProvider
		}
		if t.Logger != nil {
			tc.Logger = t.Logger
		}
		if t.TenantAttribute != nil {
			tc.Tenant = t.TenantAttribute
		}
	})
}

// uploadEvents is what one upload reports while it runs and when it ends
// (see package telemetry). The Writer owns it; the retry engine, the mode and
// the lifetime tracker report to it.
type uploadEvents = telemetry.Events[*writerScope]

// writerScope is the Writer as its events see it (telemetry.Scope): its
// target and its client's telemetry. It is a type of its own so that the
// methods telemetry needs are not the Writer's API; a *writerScope is a
// *Writer, 8 bytes in its events.
type writerScope Writer

// Context returns the upload's context.
func (s *writerScope) Context() context.Context { return s.req.Ctx }

// Names returns the upload's bucket and object.
func (s *writerScope) Names() (bucket, object string) { return s.req.Bucket, s.req.Object }

// Telemetry returns the client's telemetry.
func (s *writerScope) Telemetry() *telemetry.Telemetry { return s.c.tel }

// callScope is a call's target as its events see it (telemetry.Scope): a
// call apart from a Writer's own (a part of a parallel upload, a cleanup's
// call, a look-up of the client's).
type callScope struct {
	t   *xfer.Target
	tel *telemetry.Telemetry
}

// Context returns the call's context.
func (s *callScope) Context() context.Context { return s.t.Ctx }

// Names returns the call's bucket and object.
func (s *callScope) Names() (bucket, object string) { return s.t.Bucket, s.t.Object }

// Telemetry returns the client's telemetry.
func (s *callScope) Telemetry() *telemetry.Telemetry { return s.tel }

// callEvents are the events of a call to t and their scope, allocated
// together.
type callEvents struct {
	scope callScope
	telemetry.Events[*callScope]
}

// newCallEvents returns the events of a call to t, started now, that adds
// its events to span (nil: none).
func (c *Client) newCallEvents(t *xfer.Target, span trace.Span) *telemetry.Events[*callScope] {
	e := &callEvents{scope: callScope{t: t, tel: c.tel}}
	e.Events = telemetry.NewEvents(&e.scope, span)
	return &e.Events
}
