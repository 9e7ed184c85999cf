package integration

// What telemetry costs a small upload, client-only (the fake in another
// process), in one run. The official client appears with its metrics off
// only: against an emulator its client metrics do not start ("google cloud
// project is required"), and experimental.WithOtelMetrics with
// option.WithoutAuthentication panics in v1.70.0 (a nil credentials
// dereference in initGRPCMetricsAndWrapCredentials).
//
//
//	go test -run '^$' -bench 'Telemetry' -benchmem -count 6 ./integration/ > tel.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /telemetry tel.txt

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/storage"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader"
)

func BenchmarkTelemetry(b *testing.B) {
	addr, stop := startExternalFake(b)
	defer stop()
	ctx := context.Background()
	dial := dialTo(addr)
	objupWith := func(opts ...option.ClientOption) uploadFunc {
		c, err := uploader.NewClient(ctx, append(dial, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return warm(b, func(ctx context.Context, name string, data []byte) error {
			w, err := c.NewWriter(ctx, benchBucket, name)
			if err != nil {
				return err
			}
			if _, err := w.Write(data); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		})
	}
	officialWith := func(opts ...option.ClientOption) uploadFunc {
		c, err := storage.NewGRPCClient(ctx, append(dial, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return warm(b, func(ctx context.Context, name string, data []byte) error {
			w := c.Bucket(benchBucket).Object(name).NewWriter(ctx)
			w.ChunkSize = 0
			if _, err := w.Write(data); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		})
	}
	sdkMeter := func() *sdkmetric.MeterProvider {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { mp.Shutdown(ctx) })
		return mp
	}
	sdkTracer := func() *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
		b.Cleanup(func() { tp.Shutdown(ctx) })
		return tp
	}
	clients := []struct {
		name string
		up   uploadFunc
	}{
		{"client=objup/telemetry=off", objupWith(uploader.WithTelemetry(uploader.Telemetry{MeterProvider: metricnoop.NewMeterProvider()}), uploader.WithTelemetry(uploader.Telemetry{TracerProvider: tracenoop.NewTracerProvider()}))},
		{"client=objup/telemetry=default", objupWith()},
		{"client=objup/telemetry=metrics", objupWith(uploader.WithTelemetry(uploader.Telemetry{MeterProvider: sdkMeter()}))},
		{"client=objup/telemetry=metrics+traces", objupWith(uploader.WithTelemetry(uploader.Telemetry{MeterProvider: sdkMeter()}), uploader.WithTelemetry(uploader.Telemetry{TracerProvider: sdkTracer()}))},
		{"client=official-0/telemetry=off", officialWith(storage.WithDisabledClientMetrics())},
	}
	for _, size := range []int{1 << 10, 16 << 10} {
		data := payload(size, uint64(size))
		for _, cl := range clients {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, cl.name), func(b *testing.B) {
				name := "tel/" + cl.name
				b.SetBytes(int64(size))
				b.ReportAllocs()
				cpu := startCPU()
				for b.Loop() {
					if err := cl.up(ctx, name, data); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b, int64(size))
			})
		}
	}
}

// warm makes one upload with up, so a benchmark does not count the client's
// connection setup, and returns up.
func warm(b *testing.B, up uploadFunc) uploadFunc {
	if err := up(context.Background(), "tel/warm", []byte("warm")); err != nil {
		b.Fatal(err)
	}
	return up
}
