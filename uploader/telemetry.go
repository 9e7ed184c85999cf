package uploader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/admit"
	"github.com/objup/objup/uploader/internal/mono"
)

// instrumentationName names objup's meter and tracer.
const instrumentationName = "github.com/objup/objup/uploader"

// Upload paths, the "path" attribute.
const (
	pathOneShot   = "one-shot"
	pathResumable = "resumable"
	pathParallel  = "parallel"
)

// unsetTracerProvider is otel's global TracerProvider as it is before the
// program sets one: a delegating no-op. While otel.GetTracerProvider still
// returns it, no span is started, so a program that never configures
// OpenTelemetry pays nothing for objup's tracing. (objup's package init runs
// before the program's main and its own package inits.)
var unsetTracerProvider = otel.GetTracerProvider()

// telemetry is a Client's metrics, tracing and logging. Everything is
// recorded once per upload, on the uploading goroutine, when the upload ends;
// retries and resumes are logged and added to the span as they happen.
type telemetry struct {
	duration metric.Float64Histogram
	size     metric.Int64Histogram
	uploads  metric.Int64Counter
	retries  metric.Int64Counter
	resumes  metric.Int64Counter
	gauges   metric.Registration
	meter    metric.Meter // nil without a meter provider
	// The admission stage's: waits, and per bucket its rate and counts.
	admissionWait metric.Float64Histogram
	admission     metric.Registration
	// Per tenant, only WithTenantAttribute.
	bufferWait metric.Float64Histogram
	limitWaits metric.Int64Counter

	tracerProvider trace.TracerProvider // nil: otel's global, as it is at each upload
	tracer         atomic.Pointer[tracerFor]
	logger         *slog.Logger
	tenant         func(string) (string, bool) // nil: no tenant attribute

	mu    sync.RWMutex
	sets  map[setKey]*measureOpts
	tsets map[string]*measureOpts // by tenant attribute value alone
}

type tracerFor struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
}

// setKey names one attribute set: an upload's result, path and tenant.
type setKey struct {
	code   codes.Code
	path   string
	tenant string
}

// measureOpts are the measurement options of one attribute set, built once
// and reused, so recording allocates nothing.
type measureOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

type telemetryConfig struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	logger         *slog.Logger
	tenant         func(string) (string, bool)
}

// WithMeterProvider makes the client record its metrics with mp instead of
// otel's global MeterProvider. Pass metric/noop's provider to turn metrics
// off.
func WithMeterProvider(mp metric.MeterProvider) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.meterProvider = mp })
}

// WithTracerProvider makes the client trace uploads with tp instead of otel's
// global TracerProvider. Pass trace/noop's provider to turn tracing off.
func WithTracerProvider(tp trace.TracerProvider) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.tracerProvider = tp })
}

// WithLogger makes the client log retries, resumes, waits for a buffer and
// buffers released by force to l, with the upload's bucket, object and
// tenant. nil (the default) logs nothing.
func WithLogger(l *slog.Logger) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.logger = l })
}

// WithTenantAttribute adds the upload's tenant (header.Tenant of its
// context) to its metrics and span, as the attribute "objup.tenant" with the
// value f returns; f returning false leaves the attribute out for that
// tenant. Each distinct value is a time series of each metric: map many
// tenants to few values (a tier, a shard) if there are many. f must be safe
// for concurrent use. Without this option no tenant attribute is recorded.
func WithTenantAttribute(f func(tenant string) (value string, ok bool)) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.telemetry.tenant = f })
}

// newTelemetry creates the client's instruments. alloc's gauges are
// registered when it is a *pool.Pool.
func newTelemetry(cfg telemetryConfig, alloc pool.Allocator) (*telemetry, error) {
	t := &telemetry{
		tracerProvider: cfg.tracerProvider,
		logger:         cfg.logger,
		tenant:         cfg.tenant,
		sets:           make(map[setKey]*measureOpts),
		tsets:          make(map[string]*measureOpts),
	}
	mp := cfg.meterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if _, ok := mp.(metricnoop.MeterProvider); ok {
		mp = nil
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(instrumentationName)
	t.meter = m
	var err error
	if t.duration, err = m.Float64Histogram("objup.upload.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from NewWriter to the end of the upload."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)); err != nil {
		return nil, err
	}
	if t.size, err = m.Int64Histogram("objup.upload.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes written to the object, stored or not."),
		metric.WithExplicitBucketBoundaries(1<<10, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20, 4<<20, 16<<20, 64<<20, 256<<20, 1<<30)); err != nil {
		return nil, err
	}
	if t.uploads, err = m.Int64Counter("objup.uploads", metric.WithUnit("{upload}"),
		metric.WithDescription("Uploads ended, by result and path.")); err != nil {
		return nil, err
	}
	if t.retries, err = m.Int64Counter("objup.upload.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Failed attempts that were retried.")); err != nil {
		return nil, err
	}
	if t.resumes, err = m.Int64Counter("objup.upload.resumes", metric.WithUnit("{resume}"),
		metric.WithDescription("Resumable sessions resumed after a broken stream.")); err != nil {
		return nil, err
	}
	if t.admissionWait, err = m.Float64Histogram("objup.admission.wait", metric.WithUnit("s"),
		metric.WithDescription("Waits of writes for their turn at a bucket that pushed back, by tenant with WithTenantAttribute."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)); err != nil {
		return nil, err
	}
	if cfg.tenant != nil {
		if t.bufferWait, err = m.Float64Histogram("objup.buffer.wait", metric.WithUnit("s"),
			metric.WithDescription("Waits for a chunk buffer (the pool's budget or the tenant's limits spent), by tenant."),
			metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
			return nil, err
		}
		if t.limitWaits, err = m.Int64Counter("objup.tenant.limit_waits", metric.WithUnit("{wait}"),
			metric.WithDescription("Waits at a tenant's limit of uploads or bytes (WithTenantLimits), by tenant.")); err != nil {
			return nil, err
		}
	}
	if p, ok := alloc.(*pool.Pool); ok {
		inUse, err := m.Int64ObservableGauge("objup.pool.in_use", metric.WithUnit("By"),
			metric.WithDescription("Bytes of chunk buffers handed out and not yet back."))
		if err != nil {
			return nil, err
		}
		news, err := m.Int64ObservableCounter("objup.pool.allocated", metric.WithUnit("{buffer}"),
			metric.WithDescription("Chunk buffers allocated because none was pooled."))
		if err != nil {
			return nil, err
		}
		waits, err := m.Int64ObservableCounter("objup.pool.budget_waits", metric.WithUnit("{wait}"),
			metric.WithDescription("Buffer requests that waited for the pool's byte budget."))
		if err != nil {
			return nil, err
		}
		t.gauges, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			s := p.Stats()
			o.ObserveInt64(inUse, s.InUseBytes)
			o.ObserveInt64(news, int64(s.News))
			o.ObserveInt64(waits, int64(s.BudgetWaits))
			return nil
		}, inUse, news, waits)
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// close unregisters the pool's and the admission's gauges.
func (t *telemetry) close() {
	if t.gauges != nil {
		_ = t.gauges.Unregister()
	}
	if t.admission != nil {
		_ = t.admission.Unregister()
	}
}

// observeAdmission registers the admission stage's figures, per bucket
// (attribute objup.bucket): objup.admission.rate, the learned rate (0 while
// the bucket has not pushed back), and the counters
// objup.admission.rejections and objup.admission.waits.
func (t *telemetry) observeAdmission(s *admit.Stage) {
	if t.meter == nil {
		return
	}
	rate, err1 := t.meter.Float64ObservableGauge("objup.admission.rate", metric.WithUnit("{write}/s"),
		metric.WithDescription("The rate of writes a bucket admits, as learnt from its pushback; 0 while it has not pushed back."))
	rejections, err2 := t.meter.Int64ObservableCounter("objup.admission.rejections", metric.WithUnit("{write}"),
		metric.WithDescription("Writes the service refused for load (429, RESOURCE_EXHAUSTED, 503), per bucket."))
	waits, err3 := t.meter.Int64ObservableCounter("objup.admission.waits", metric.WithUnit("{write}"),
		metric.WithDescription("Writes that waited for their turn, per bucket."))
	if errors.Join(err1, err2, err3) != nil {
		return
	}
	t.admission, _ = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s.Each(func(b *admit.Bucket) {
			st := b.Stats()
			at := metric.WithAttributes(attribute.String("objup.bucket", b.Name()))
			o.ObserveFloat64(rate, st.Rate, at)
			o.ObserveInt64(rejections, st.Rejections, at)
			o.ObserveInt64(waits, st.Waits, at)
		})
		return nil
	}, rate, rejections, waits)
}

// startSpan starts the span of an upload, if tracing is on, and returns the
// context to upload with.
func (t *telemetry) startSpan(ctx context.Context, bucket, object string) (context.Context, trace.Span) {
	tp := t.tracerProvider
	if tp == nil {
		if tp = otel.GetTracerProvider(); tp == unsetTracerProvider {
			return ctx, nil
		}
	}
	if _, ok := tp.(tracenoop.TracerProvider); ok {
		return ctx, nil
	}
	tf := t.tracer.Load()
	if tf == nil || tf.tp != tp {
		tf = &tracerFor{tp: tp, tracer: tp.Tracer(instrumentationName)}
		t.tracer.Store(tf)
	}
	ctx, span := tf.tracer.Start(ctx, "objup.upload", trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, nil
	}
	span.SetAttributes(attribute.String("gcs.bucket", bucket), attribute.String("gcs.object", object))
	return ctx, span
}

// opts returns the measurement options of the attribute set for key, built
// on first use.
func (t *telemetry) opts(key setKey) *measureOpts {
	t.mu.RLock()
	o := t.sets[key]
	t.mu.RUnlock()
	if o != nil {
		return o
	}
	kv := []attribute.KeyValue{
		attribute.String("objup.result", resultName(key.code)),
		attribute.String("objup.path", key.path),
	}
	if key.tenant != "" {
		kv = append(kv, attribute.String("objup.tenant", key.tenant))
	}
	set := attribute.NewSet(kv...)
	o = &measureOpts{
		add:    []metric.AddOption{metric.WithAttributeSet(set)},
		record: []metric.RecordOption{metric.WithAttributeSet(set)},
	}
	t.mu.Lock()
	if prior := t.sets[key]; prior != nil {
		o = prior
	} else {
		t.sets[key] = o
	}
	t.mu.Unlock()
	return o
}

// tenantOpts returns the measurement options of the tenant attribute of an
// upload's context alone, built on first use.
func (t *telemetry) tenantOpts(ctx context.Context) *measureOpts {
	v := t.tenantOf(ctx)
	t.mu.RLock()
	o := t.tsets[v]
	t.mu.RUnlock()
	if o != nil {
		return o
	}
	var set attribute.Set
	if v != "" {
		set = attribute.NewSet(attribute.String("objup.tenant", v))
	}
	o = &measureOpts{
		add:    []metric.AddOption{metric.WithAttributeSet(set)},
		record: []metric.RecordOption{metric.WithAttributeSet(set)},
	}
	t.mu.Lock()
	if prior := t.tsets[v]; prior != nil {
		o = prior
	} else {
		t.tsets[v] = o
	}
	t.mu.Unlock()
	return o
}

// resultName is the "result" attribute: "ok", or the gRPC code's name.
func resultName(c codes.Code) string {
	if c == codes.OK {
		return "ok"
	}
	return c.String()
}

// tenantOf returns the tenant attribute value of an upload's context.
func (t *telemetry) tenantOf(ctx context.Context) string {
	if t.tenant == nil {
		return ""
	}
	id, ok := header.Tenant(ctx)
	if !ok {
		return ""
	}
	v, ok := t.tenant(id)
	if !ok {
		return ""
	}
	return v
}

// uploadEvents is what one upload reports while it runs: its retries and
// resumes, waits for a buffer, and buffers released by force. The Writer
// owns it; the retrier, the session and the lifetime tracker report to it.
type uploadEvents struct {
	tg      *target    // the upload's context, names and client
	span    trace.Span // nil when not tracing
	start   mono.Time
	retries int32
	resumes int32
}

// retried notes a failed attempt of op that will be retried after pause.
func (e *uploadEvents) retried(op string, cause error, pause time.Duration) {
	e.retries++
	if e.span != nil {
		e.span.AddEvent("retry", trace.WithAttributes(
			attribute.String("rpc", op), attribute.String("cause", cause.Error()), attribute.Int64("attempt", int64(e.retries))))
	}
	if l := e.tg.c.tel.logger; l != nil {
		l.LogAttrs(e.tg.ctx, slog.LevelWarn, "objup: retrying after a transient failure", e.logAttrs(
			slog.String("rpc", op), slog.String("cause", cause.Error()), slog.Duration("backoff", pause), slog.Int("retry", int(e.retries)))...)
	}
}

// resumed notes a session resumed at offset after a broken stream.
func (e *uploadEvents) resumed(offset int64, cause error) {
	e.resumes++
	if e.span != nil {
		e.span.AddEvent("resume", trace.WithAttributes(attribute.Int64("offset", offset), attribute.String("cause", errText(cause))))
	}
	if l := e.tg.c.tel.logger; l != nil {
		l.LogAttrs(e.tg.ctx, slog.LevelInfo, "objup: resumed the upload", e.logAttrs(
			slog.Int64("offset", offset), slog.String("cause", errText(cause)))...)
	}
}

// waited notes a wait of d for a chunk buffer (a pool budget, a tenant
// limit or WithBuffer).
func (e *uploadEvents) waited(d time.Duration) {
	t := e.tg.c.tel
	if l := t.logger; l != nil && d > time.Millisecond {
		l.LogAttrs(e.tg.ctx, slog.LevelDebug, "objup: waited for a chunk buffer", e.logAttrs(slog.Duration("wait", d))...)
	}
	if t.bufferWait != nil {
		t.bufferWait.Record(e.tg.ctx, d.Seconds(), t.tenantOpts(e.tg.ctx).record...)
	}
}

// admitted notes a write's wait for its turn at the admission stage.
func (e *uploadEvents) admitted(d time.Duration) {
	t := e.tg.c.tel
	if l := t.logger; l != nil && d > 100*time.Millisecond {
		l.LogAttrs(e.tg.ctx, slog.LevelDebug, "objup: waited for admission", e.logAttrs(slog.Duration("wait", d))...)
	}
	if t.admissionWait != nil {
		t.admissionWait.Record(e.tg.ctx, d.Seconds(), t.tenantOpts(e.tg.ctx).record...)
	}
}

// limitWait notes a wait at one of the tenant's limits (WithTenantLimits).
func (e *uploadEvents) limitWait() {
	t := e.tg.c.tel
	if t.limitWaits != nil {
		t.limitWaits.Add(e.tg.ctx, 1, t.tenantOpts(e.tg.ctx).add...)
	}
}

// forced notes n messages that gRPC never released, released by force.
func (e *uploadEvents) forced(n int) {
	if l := e.tg.c.tel.logger; l != nil && n > 0 {
		l.LogAttrs(context.Background(), slog.LevelDebug, "objup: released buffers gRPC dropped", e.logAttrs(slog.Int("messages", n))...)
	}
}

func (e *uploadEvents) logAttrs(extra ...slog.Attr) []slog.Attr {
	a := append(make([]slog.Attr, 0, 3+len(extra)), slog.String("bucket", e.tg.bucket), slog.String("object", e.tg.object))
	if id, ok := header.Tenant(e.tg.ctx); ok {
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

// ended records the upload's end: its metrics, and its span's attributes
// and status.
func (e *uploadEvents) ended(size int64, path string, err error) {
	t := e.tg.c.tel
	code := codeOf(err)
	if t.uploads != nil {
		o := t.opts(setKey{code: code, path: path, tenant: t.tenantOf(e.tg.ctx)})
		ctx := e.tg.ctx
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
		if v := t.tenantOf(e.tg.ctx); v != "" {
			s.SetAttributes(attribute.String("objup.tenant", v))
		}
		if err != nil {
			s.RecordError(err)
			s.SetStatus(otelcodes.Error, err.Error())
		}
		s.End()
	}
}
