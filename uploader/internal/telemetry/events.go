package telemetry

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader/internal/mono"
)

// Scope is what an upload's events are about: its context (read at each
// event, so it may change while the upload runs), its names, and its
// client's Telemetry. The uploader's upload target implements it, with a
// pointer: Events holds the pointer alone, 8 bytes in the Writer where an
// interface would take 16.
type Scope interface {
	Context() context.Context
	Names() (bucket, object string)
	Telemetry() *Telemetry
}

// Events is what one upload reports while it runs: its retries and
// resumes, waits for a buffer, and buffers released by force, and at its
// end its metrics and span. The Writer owns it; the retrier, the session
// and the lifetime tracker report to it, on the upload's goroutines (it is
// not safe for concurrent use). NewEvents makes one.
type Events[S Scope] struct {
	scope   S          // the upload's context, names and client
	span    trace.Span // nil when not tracing
	start   mono.Time
	retries int32
	resumes int32
}

// NewEvents returns the events of an upload about s, started now, that
// adds its events to span (nil: none, until StartSpan).
func NewEvents[S Scope](s S, span trace.Span) Events[S] {
	return Events[S]{scope: s, span: span, start: mono.Now()}
}

// StartSpan starts the upload's span, if tracing is on, and returns the
// context to upload with.
func (e *Events[S]) StartSpan(ctx context.Context, bucket, object string) context.Context {
	ctx, e.span = e.scope.Telemetry().StartSpan(ctx, bucket, object)
	return ctx
}

// Scope returns what the events are about.
func (e *Events[S]) Scope() S { return e.scope }

// Span returns the upload's span, nil when not tracing.
func (e *Events[S]) Span() trace.Span { return e.span }

// Start returns when the upload started.
func (e *Events[S]) Start() mono.Time { return e.start }

// Retries returns the number of retried attempts so far.
func (e *Events[S]) Retries() int32 { return e.retries }

// Retried notes a failed attempt of op that will be retried after pause.
func (e *Events[S]) Retried(op string, cause error, pause time.Duration) {
	e.retries++
	if e.span != nil {
		e.span.AddEvent("retry", trace.WithAttributes(
			attribute.String("rpc", op), attribute.String("cause", cause.Error()), attribute.Int64("attempt", int64(e.retries))))
	}
	if l := e.scope.Telemetry().logger; l != nil {
		l.LogAttrs(e.scope.Context(), slog.LevelWarn, "objup: retrying after a transient failure", e.LogAttrs(
			slog.String("rpc", op), slog.String("cause", cause.Error()), slog.Duration("backoff", pause), slog.Int("retry", int(e.retries)))...)
	}
}

// Resumed notes a session resumed at offset after a broken stream.
func (e *Events[S]) Resumed(offset int64, cause error) {
	e.resumes++
	if e.span != nil {
		e.span.AddEvent("resume", trace.WithAttributes(attribute.Int64("offset", offset), attribute.String("cause", errText(cause))))
	}
	if l := e.scope.Telemetry().logger; l != nil {
		l.LogAttrs(e.scope.Context(), slog.LevelInfo, "objup: resumed the upload", e.LogAttrs(
			slog.Int64("offset", offset), slog.String("cause", errText(cause)))...)
	}
}

// Waited notes a wait of d for a chunk buffer (a pool budget, a tenant
// limit or WithBuffer).
func (e *Events[S]) Waited(d time.Duration) {
	t := e.scope.Telemetry()
	if l := t.logger; l != nil && d > time.Millisecond {
		l.LogAttrs(e.scope.Context(), slog.LevelDebug, "objup: waited for a chunk buffer", e.LogAttrs(slog.Duration("wait", d))...)
	}
	if t.bufferWait != nil {
		t.bufferWait.Record(e.scope.Context(), d.Seconds(), t.tenantOpts(e.scope.Context()).record...)
	}
}

// Admitted notes a write's wait for its turn at the admission stage.
func (e *Events[S]) Admitted(d time.Duration) {
	t := e.scope.Telemetry()
	if l := t.logger; l != nil && d > 100*time.Millisecond {
		l.LogAttrs(e.scope.Context(), slog.LevelDebug, "objup: waited for admission", e.LogAttrs(slog.Duration("wait", d))...)
	}
	if t.admissionWait != nil {
		t.admissionWait.Record(e.scope.Context(), d.Seconds(), t.tenantOpts(e.scope.Context()).record...)
	}
}

// LimitWait notes a wait at one of the tenant's limits (WithTenantLimits).
func (e *Events[S]) LimitWait() {
	t := e.scope.Telemetry()
	if t.limitWaits != nil {
		t.limitWaits.Add(e.scope.Context(), 1, t.tenantOpts(e.scope.Context()).add...)
	}
}

// Flushed notes a Flush of an appendable object that the service answered
// after d.
func (e *Events[S]) Flushed(d time.Duration) {
	if t := e.scope.Telemetry(); t.flushes != nil {
		t.flushes.Record(e.scope.Context(), d.Seconds(), t.tenantOpts(e.scope.Context()).record...)
	}
	if e.span != nil {
		e.span.AddEvent("flush", trace.WithAttributes(attribute.Float64("seconds", d.Seconds())))
	}
	if l := e.scope.Telemetry().logger; l != nil {
		l.LogAttrs(e.scope.Context(), slog.LevelDebug, "objup: flushed", e.LogAttrs(slog.Duration("latency", d))...)
	}
}

// TookOver notes the takeover of an appendable object.
func (e *Events[S]) TookOver() {
	if t := e.scope.Telemetry(); t.takeovers != nil {
		t.takeovers.Add(e.scope.Context(), 1, t.tenantOpts(e.scope.Context()).add...)
	}
	if e.span != nil {
		e.span.AddEvent("takeover")
	}
	if l := e.scope.Telemetry().logger; l != nil {
		l.LogAttrs(e.scope.Context(), slog.LevelInfo, "objup: took over an appendable object", e.LogAttrs()...)
	}
}

// Redirected notes a redirect of an appendable object's stream, which the
// next stream follows with the routing token token. Unlike the other
// events, it may be called from the stream's receiver goroutine: it only
// records.
func (e *Events[S]) Redirected(token string) {
	if t := e.scope.Telemetry(); t.redirects != nil {
		t.redirects.Add(e.scope.Context(), 1, t.tenantOpts(e.scope.Context()).add...)
	}
	if e.span != nil {
		e.span.AddEvent("redirect", trace.WithAttributes(attribute.String("routing_token", token)))
	}
	if l := e.scope.Telemetry().logger; l != nil {
		l.LogAttrs(e.scope.Context(), slog.LevelInfo, "objup: redirected", e.LogAttrs(slog.String("routing_token", token))...)
	}
}

// Forced notes n messages that gRPC never released, released by force.
func (e *Events[S]) Forced(n int) {
	if l := e.scope.Telemetry().logger; l != nil && n > 0 {
		l.LogAttrs(context.Background(), slog.LevelDebug, "objup: released buffers gRPC dropped", e.LogAttrs(slog.Int("messages", n))...)
	}
}

// LogAttrs returns the attributes of a log record of the upload: its
// bucket, object and tenant, then extra.
func (e *Events[S]) LogAttrs(extra ...slog.Attr) []slog.Attr {
	bucket, object := e.scope.Names()
	a := append(make([]slog.Attr, 0, 3+len(extra)), slog.String("bucket", bucket), slog.String("object", object))
	if id, ok := header.Tenant(e.scope.Context()); ok {
		a = append(a, slog.String("tenant", id))
	}
	return append(a, extra...)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Ended records the upload's end: its metrics, and its span's attributes
// and status.
func (e *Events[S]) Ended(size int64, path string, err error) {
	t := e.scope.Telemetry()
	code := t.code(err)
	if t.uploads != nil {
		o := t.opts(setKey{code: code, path: path, tenant: t.tenantOf(e.scope.Context())})
		ctx := e.scope.Context()
		t.uploads.Add(ctx, 1, o.add...)
		t.duration.Record(ctx, mono.Now().Since(e.start).Seconds(), o.record...)
		t.size.Record(ctx, size, o.record...)
		if e.retries > 0 {
			t.retries.Add(ctx, int64(e.retries), o.add...)
		}
		if e.resumes > 0 {
			t.resumes.Add(ctx, int64(e.resumes), o.add...)
		}
	}
	if s := e.span; s != nil {
		s.SetAttributes(attribute.Int64("objup.size", size), attribute.String("objup.path", path),
			attribute.String("objup.result", resultName(code)))
		if v := t.tenantOf(e.scope.Context()); v != "" {
			s.SetAttributes(attribute.String("objup.tenant", v))
		}
		if err != nil {
			s.RecordError(err)
			s.SetStatus(otelcodes.Error, err.Error())
		}
		s.End()
	}
}
