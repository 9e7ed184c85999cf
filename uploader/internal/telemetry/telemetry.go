package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/admit"
)

// instrumentationName names objup's meter and tracer.
const instrumentationName = "github.com/objup/objup/uploader"

// unsetTracerProvider is otel's global TracerProvider as it is before the
// program sets one: a delegating no-op. While otel.GetTracerProvider still
// returns it, no span is started, so a program that never configures
// OpenTelemetry pays nothing for objup's tracing. (objup's package init runs
// before the program's main and its own package inits.)
var unsetTracerProvider = otel.GetTracerProvider()

// Telemetry is a client's metrics, tracing and logging. New makes it; its
// methods are safe for concurrent use.
type Telemetry struct {
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
	// Appendable objects': flushes, takeovers and redirects.
	flushes   metric.Float64Histogram
	takeovers metric.Int64Counter
	redirects metric.Int64Counter
	// Per tenant, only Telemetry.TenantAttribute.
	bufferWait metric.Float64Histogram
	limitWaits metric.Int64Counter

	tracerProvider trace.TracerProvider // nil: otel's global, as it is at each upload
	tracer         atomic.Pointer[tracerFor]
	logger         *slog.Logger
	tenant         func(string) (string, bool) // nil: no tenant attribute
	code           func(error) codes.Code      // an upload's result

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

// Config is what a client's options say of its telemetry. The zero Config
// records with otel's global providers and logs nothing.
type Config struct {
	// MeterProvider records the metrics; nil is otel's global one.
	MeterProvider metric.MeterProvider
	// TracerProvider traces uploads; nil is otel's global one, as it is
	// at each upload.
	TracerProvider trace.TracerProvider
	// Logger logs retries, resumes, waits and buffers released by force;
	// nil logs nothing.
	Logger *slog.Logger
	// Tenant maps an upload's tenant to its tenant attribute, if any; nil
	// records no tenant attribute.
	Tenant func(tenant string) (value string, ok bool)
}

// New creates a client's instruments. alloc's gauges are registered when
// it is a *pool.Pool. code classifies an upload's error for its result
// attribute ("ok", or the code's name). Close unregisters the gauges.
func New(cfg Config, alloc pool.Allocator, code func(error) codes.Code) (*Telemetry, error) {
	t := &Telemetry{
		tracerProvider: cfg.TracerProvider,
		logger:         cfg.Logger,
		tenant:         cfg.Tenant,
		code:           code,
		sets:           make(map[setKey]*measureOpts),
		tsets:          make(map[string]*measureOpts),
	}
	mp := cfg.MeterProvider
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
		metric.WithDescription("Waits of writes for their turn at a bucket that pushed back, by tenant with Telemetry.TenantAttribute."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)); err != nil {
		return nil, err
	}
	if t.flushes, err = m.Float64Histogram("objup.append.flush.duration", metric.WithUnit("s"),
		metric.WithDescription("Flushes of appendable objects, from Flush to the service's persisted size, by tenant with Telemetry.TenantAttribute."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
		return nil, err
	}
	if t.takeovers, err = m.Int64Counter("objup.append.takeovers", metric.WithUnit("{takeover}"),
		metric.WithDescription("Appendable objects taken over (Client.TakeOver).")); err != nil {
		return nil, err
	}
	if t.redirects, err = m.Int64Counter("objup.append.redirects", metric.WithUnit("{redirect}"),
		metric.WithDescription("Redirects of appendable objects' streams followed.")); err != nil {
		return nil, err
	}
	if cfg.Tenant != nil {
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

// Close unregisters the pool's and the admission's gauges.
func (t *Telemetry) Close() {
	if t.gauges != nil {
		_ = t.gauges.Unregister()
	}
	if t.admission != nil {
		_ = t.admission.Unregister()
	}
}

// ObserveAdmission registers the admission stage's figures, per bucket
// (attribute objup.bucket): objup.admission.rate, the learned rate (0 while
// the bucket has not pushed back), and the counters
// objup.admission.rejections and objup.admission.waits.
func (t *Telemetry) ObserveAdmission(s *admit.Stage) {
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

// StartSpan starts the span of an upload, if tracing is on, and returns the
// context to upload with and the span, nil when not tracing. The caller
// ends the span (Events.Ended does).
func (t *Telemetry) StartSpan(ctx context.Context, bucket, object string) (context.Context, trace.Span) {
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
func (t *Telemetry) opts(key setKey) *measureOpts {
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
func (t *Telemetry) tenantOpts(ctx context.Context) *measureOpts {
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

// Logger returns the client's logger; nil logs nothing.
func (t *Telemetry) Logger() *slog.Logger { return t.logger }

// resultName is the "result" attribute: "ok", or the gRPC code's name.
func resultName(c codes.Code) string {
	if c == codes.OK {
		return "ok"
	}
	return c.String()
}

// tenantOf returns the tenant attribute value of an upload's context.
func (t *Telemetry) tenantOf(ctx context.Context) string {
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
