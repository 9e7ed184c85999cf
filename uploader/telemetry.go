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
// the lifetime tracker report to it. newEvents makes one.
type uploadEvents = telemetry.Events[*eventScope]

// newEvents returns the events of the upload to t, started now, that adds
// its events to span (nil: none, until StartSpan).
func newEvents(t *xfer.Target, span trace.Span) uploadEvents {
	return telemetry.NewEvents((*eventScope)(t), span)
}

// eventScope is an upload's target as its events see it (telemetry.Scope).
// It is a type of its own so that the methods telemetry needs are not
// promoted to the Writer, which embeds its target.
type eventScope xfer.Target

// Context returns the upload's context.
func (t *eventScope) Context() context.Context { return t.Ctx }

// Names returns the upload's bucket and object.
func (t *eventScope) Names() (bucket, object string) { return t.Bucket, t.Object }

// Telemetry returns the client's telemetry.
func (t *eventScope) Telemetry() *telemetry.Telemetry { return clientOf((*xfer.Target)(t)).tel }
