package uploadertest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

// series names one time series: its attributes.
type series struct{ result, path, tenant string }

func seriesOf(s attribute.Set) series {
	get := func(k string) string {
		v, _ := s.Value(attribute.Key(k))
		return v.AsString()
	}
	return series{get("objup.result"), get("objup.path"), get("objup.tenant")}
}

// TestTelemetryCounts runs 100 uploads for 3 tenants, with retried
// failures, resumes and precondition failures, and checks that the metrics,
// spans and logs say exactly what happened, per tenant.
func TestTelemetryCounts(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, uploader.WithTelemetry(uploader.Telemetry{MeterProvider: mp}), uploader.WithTelemetry(uploader.Telemetry{TracerProvider: tp}), uploader.WithTelemetry(uploader.Telemetry{Logger: logger}),
		uploader.WithTelemetry(uploader.Telemetry{TenantAttribute: func(id string) (string, bool) { return id, id != "hidden" }}))

	type want struct {
		uploads, retries, resumes, bytes int64
	}
	expect := map[series]*want{}
	add := func(s series, w want) {
		if expect[s] == nil {
			expect[s] = &want{}
		}
		x := expect[s]
		x.uploads += w.uploads
		x.retries += w.retries
		x.resumes += w.resumes
		x.bytes += w.bytes
	}
	for i := range 100 {
		tenant := fmt.Sprintf("t%d", i%3)
		if i == 99 {
			tenant = "hidden" // mapped to no attribute
		}
		ctx, err := header.WithTenant(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		attrTenant := tenant
		if tenant == "hidden" {
			attrTenant = ""
		}
		name := fmt.Sprintf("tel/%d", i)
		var size int
		var w want
		result, path := "ok", "one-shot"
		switch i % 5 {
		case 0: // one-shot
			size = kib
		case 1: // resumable
			size, path = 300*kib, "resumable"
		case 2: // one-shot retried once
			size, w.retries = 2*kib, 1
			e.srv.FailCall("WriteObject", 1, codes.Unavailable)
		case 3: // resumable, resumed once after a broken stream
			size, path, w.retries, w.resumes = 600*kib, "resumable", 1, 1
			e.srv.BreakStream("BidiWriteObject", 300*kib, codes.Unavailable)
		case 4: // precondition failure: the object of i-4 exists
			size, name, result = 3*kib, fmt.Sprintf("tel/%d", i-4), "FailedPrecondition"
		}
		w.uploads, w.bytes = 1, int64(size)
		add(series{result, path, attrTenant}, w)
		_, err = e.c.Upload(ctx, bucket, name, bytes.NewReader(payload(size, uint64(i))), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
		if (err == nil) != (result == "ok") {
			t.Fatalf("upload %d: %v, want result %s", i, err, result)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[series]*want{}
	at := func(s attribute.Set) *want {
		k := seriesOf(s)
		if got[k] == nil {
			got[k] = &want{}
		}
		return got[k]
	}
	var poolSeen bool
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					switch m.Name {
					case "objup.uploads":
						at(p.Attributes).uploads += p.Value
					case "objup.upload.retries":
						at(p.Attributes).retries += p.Value
					case "objup.upload.resumes":
						at(p.Attributes).resumes += p.Value
					case "objup.pool.allocated", "objup.pool.budget_waits":
						poolSeen = true
					}
				}
			case metricdata.Histogram[int64]:
				if m.Name == "objup.upload.size" {
					for _, p := range d.DataPoints {
						at(p.Attributes).bytes += p.Sum
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name == "objup.upload.duration" {
					for _, p := range d.DataPoints {
						if w := expect[seriesOf(p.Attributes)]; w == nil || int64(p.Count) != w.uploads {
							t.Errorf("duration of %v: %d points, want %v", seriesOf(p.Attributes), p.Count, w)
						}
					}
				}
			case metricdata.Gauge[int64]:
				if m.Name == "objup.pool.in_use" {
					poolSeen = true
					if v := d.DataPoints[0].Value; v != 0 {
						t.Errorf("pool in use %d bytes after every upload", v)
					}
				}
			}
		}
	}
	if !poolSeen {
		t.Error("no pool gauges")
	}
	for k, w := range expect {
		if g := got[k]; g == nil || *g != *w {
			t.Errorf("series %+v: got %+v, want %+v", k, g, *w)
		}
	}
	for k, g := range got {
		if expect[k] == nil {
			t.Errorf("unexpected series %+v: %+v", k, *g)
		}
	}

	ended := spans.GetSpans()
	if len(ended) != 100 {
		t.Fatalf("%d spans, want 100", len(ended))
	}
	events := map[string]int{}
	errorsSeen := 0
	for _, s := range ended {
		for _, ev := range s.Events {
			events[ev.Name]++
		}
		if s.Status.Code == otelcodes.Error {
			errorsSeen++
		}
	}
	if events["retry"] != 40 || events["resume"] != 20 || errorsSeen != 20 {
		t.Errorf("span events %v and %d error spans, want 40 retries, 20 resumes, 20 errors", events, errorsSeen)
	}
	text := logs.String()
	if n := strings.Count(text, "objup: retrying"); n != 40 {
		t.Errorf("%d retry log lines, want 40", n)
	}
	if n := strings.Count(text, "objup: resumed the upload"); n != 20 {
		t.Errorf("%d resume log lines, want 20", n)
	}
	if !strings.Contains(text, "tenant=t1") {
		t.Errorf("logs carry no tenant:\n%s", text)
	}
}

// TestTelemetryParallelParts: a parallel upload's span has an event per
// part, naming the part, its size and its retries, and the failed part's
// error when one fails for good; the upload counts under the path
// "parallel".
func TestTelemetryParallelParts(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	e := newEnv(t, uploader.WithTelemetry(uploader.Telemetry{TracerProvider: tp}))
	opt := uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 256 * kib, Parts: 1})
	e.srv.FailCall("StartResumableWrite", 2, codes.Unavailable) // the second part is retried once
	if _, err := e.c.Upload(context.Background(), bucket, "par/ok", bytes.NewReader(payload(700*kib, 1)), opt); err != nil {
		t.Fatal(err)
	}
	e.srv.FailCall("StartResumableWrite", 1, codes.PermissionDenied)
	if _, err := e.c.Upload(context.Background(), bucket, "par/fail", bytes.NewReader(payload(700*kib, 2)), opt); uploader.CodeOf(err) != codes.PermissionDenied {
		t.Fatalf("upload with a denied part: %v, want PermissionDenied", err)
	}
	type part struct {
		bytes, retries int64
		failed         bool
	}
	got := map[string][]part{}
	for _, s := range spans.GetSpans() {
		var name, path string
		for _, a := range s.Attributes {
			switch a.Key {
			case "gcs.object":
				name = a.Value.AsString()
			case "objup.path":
				path = a.Value.AsString()
			}
		}
		if path != "parallel" {
			t.Errorf("span of %s: path %q, want parallel", name, path)
		}
		for _, ev := range s.Events {
			if ev.Name != "part" {
				continue
			}
			var p part
			for _, a := range ev.Attributes {
				switch a.Key {
				case "bytes":
					p.bytes = a.Value.AsInt64()
				case "retries":
					p.retries = a.Value.AsInt64()
				case "error":
					p.failed = true
				}
			}
			got[name] = append(got[name], p)
		}
	}
	want := map[string][]part{
		"par/ok":   {{256 * kib, 0, false}, {256 * kib, 1, false}, {188 * kib, 0, false}},
		"par/fail": {{256 * kib, 0, true}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("part events %v, want %v", got, want)
	}
}

// TestTelemetryAppendable: an appendable object's flushes, its takeover and
// a redirect show in the metrics (objup.append.*), as span events and in
// the upload's path ("appendable").
func TestTelemetryAppendable(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	e := newEnv(t, uploader.WithTelemetry(uploader.Telemetry{MeterProvider: mp}), uploader.WithTelemetry(uploader.Telemetry{TracerProvider: tp}))
	ctx := context.Background()

	w, err := e.c.NewWriter(ctx, bucket, "log", uploader.WithAppendable(), uploader.WithoutFinalize())
	if err != nil {
		t.Fatal(err)
	}
	e.srv.RedirectAppend(1<<10, "moved")
	for _, n := range []int{100, 2 << 10, 10} { // the second flush is redirected, and resumed
		w.Write(payload(n, uint64(n)))
		if _, err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, _, err := e.c.TakeOver(ctx, bucket, "log", w.Attrs().Generation)
	if err != nil {
		t.Fatal(err)
	}
	w2.Write([]byte("end"))
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] += p.Value
					if m.Name == "objup.uploads" && seriesOf(p.Attributes).path != "appendable" {
						t.Errorf("an upload counted under path %q", seriesOf(p.Attributes).path)
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] += int64(p.Count)
				}
			}
		}
	}
	for name, want := range map[string]int64{"objup.append.flush.duration": 3, "objup.append.takeovers": 1, "objup.append.redirects": 1, "objup.uploads": 2} {
		if got[name] != want {
			t.Errorf("%s: %d, want %d", name, got[name], want)
		}
	}
	events := map[string]int{}
	for _, s := range spans.GetSpans() {
		for _, ev := range s.Events {
			events[ev.Name]++
		}
	}
	if events["flush"] != 3 || events["takeover"] != 1 || events["redirect"] != 1 {
		t.Errorf("span events %v, want 3 flushes, 1 takeover, 1 redirect", events)
	}
}
