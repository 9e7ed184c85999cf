package integration

// BenchmarkTenants: one client, one pool budget, two tenants. Tenant
// "noisy" runs goroutines that upload 32 MiB objects in a loop; tenant
// "quiet" uploads 1 KiB objects one after another, b.N of them. It reports
// the quiet tenant's p50 and p99 latency (and of that, the time it took to
// get its one buffer: the rest is the call), the noisy tenant's throughput and
// the pool's peak bytes in use, with objup's defaults (fair: tenants served
// in turn at the spent budget, each holding at most 7/8 of it) and first
// come first served (unfair: each tenant weighs more than it has waiters
// and may hold the whole budget). The server is fakes/cmd/gcssink in
// another process, so the figures are the client's. Run it with a fixed
// count of quiet uploads:
//
//	go test -run '^$' -bench Tenants -benchtime 300x -count 3 ./integration/
//
// Over loopback the noisy tenant is bound by the CPU, which the client and
// the sink share. OBJUP_BENCH_BANDWIDTH (such as 100MB/s, per connection)
// and OBJUP_BENCH_RTTS (its first value) put a simulated path in front of
// the sink instead (-bandwidth, -rtt, -max-streams 100), so that the path
// bounds the noisy tenant, as the network does outside a test:
//
//	OBJUP_BENCH_BANDWIDTH=100MB/s OBJUP_BENCH_RTTS=2ms go test -run '^$' -bench Tenants -benchtime 300x ./integration/

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

func BenchmarkTenants(b *testing.B) {
	var args []string
	if bw := os.Getenv("OBJUP_BENCH_BANDWIDTH"); bw != "" || os.Getenv("OBJUP_BENCH_RTTS") != "" {
		if bw == "" {
			bw = "0"
		}
		args = []string{"-bandwidth", bw, "-rtt", benchRTTs(b)[0].String(), "-max-streams", "100"}
	}
	addr, stop := startSink(b, args...)
	defer stop()
	noisyData := payload(32<<20, 7)
	quietData := payload(1<<10, 8)
	for _, sc := range []struct {
		name   string
		budget int64
		noisy  int
		fair   bool
	}{
		{"quiet-alone/budget=64MiB", 64 << 20, 0, true},
		{"noisy=64x32MiB/budget=64MiB/fair", 64 << 20, 64, true},
		{"noisy=64x32MiB/budget=64MiB/unfair", 64 << 20, 64, false},
		{"noisy=256x32MiB/budget=16MiB/fair", 16 << 20, 256, true},
		{"noisy=256x32MiB/budget=16MiB/unfair", 16 << 20, 256, false},
		{"noisy=64x32MiB/budget=64MiB/fair/noisy-limit=48MiB", 64 << 20, 64, true},
	} {
		b.Run(sc.name, func(b *testing.B) {
			p, err := pool.New(pool.WithBudget(sc.budget))
			if err != nil {
				b.Fatal(err)
			}
			opts := []option.ClientOption{
				option.WithEndpoint(addr),
				option.WithoutAuthentication(),
				option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
				uploader.WithPool(p),
			}
			switch {
			case !sc.fair:
				// Every tenant has more places in line than waiters,
				// and may hold the whole budget: first come, first
				// served.
				opts = append(opts, uploader.WithTenantLimits(uploader.TenantLimits{Bytes: math.MaxInt64, Weight: func(string) int { return 1 << 20 }}))
			case strings.Contains(sc.name, "noisy-limit"):
				opts = append(opts, uploader.WithTenantLimits(uploader.TenantLimits{Bytes: sc.budget * 3 / 4}))
			}
			c, err := uploader.NewClient(context.Background(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			quiet, _ := header.WithTenant(context.Background(), "quiet")
			noisy, _ := header.WithTenant(context.Background(), "noisy")

			stopPeak := startPeakPool(p)

			nctx, stopNoisy := context.WithCancel(noisy)
			var wg sync.WaitGroup
			var noisyBytes atomic.Int64
			var noisyErr atomic.Value
			for i := range sc.noisy {
				wg.Go(func() {
					for k := 0; nctx.Err() == nil; k++ {
						// Throughput counts the bytes the service
						// acknowledged, finished objects or not.
						var acked atomic.Int64
						progress := uploader.WithProgress(func(n int64) {
							for {
								old := acked.Load()
								if n <= old {
									return
								}
								if acked.CompareAndSwap(old, n) {
									noisyBytes.Add(n - old)
									return
								}
							}
						})
						_, err := c.Upload(nctx, benchBucket, fmt.Sprintf("noisy/%d/%d", i, k), bytes.NewReader(noisyData), progress)
						if err != nil && !errors.Is(err, context.Canceled) {
							noisyErr.Store(err)
							return
						}
					}
				})
			}
			if sc.noisy > 0 {
				// Let the noisy tenant fill the budget first.
				for p.Stats().InUseBytes < sc.budget/2 {
					time.Sleep(time.Millisecond)
				}
			}

			// Each quiet upload's time, and the part of it spent
			// getting its one buffer (Write), the rest being the call
			// (Close).
			lat := make([]time.Duration, 0, b.N)
			waits := make([]time.Duration, 0, b.N)
			start := time.Now()
			i := 0
			for b.Loop() {
				t0 := time.Now()
				w, err := c.NewWriter(quiet, benchBucket, fmt.Sprintf("quiet/%d", i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(quietData); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				waits = append(waits, t1.Sub(t0))
				i++
			}
			elapsed := time.Since(start)
			stopNoisy()
			wg.Wait()
			peak := stopPeak()
			if err, _ := noisyErr.Load().(error); err != nil {
				b.Fatalf("noisy upload: %v", err)
			}
			slices.Sort(lat)
			slices.Sort(waits)
			q := func(d []time.Duration, f float64) float64 { return float64(d[int(f*float64(len(d)-1))].Microseconds()) }
			b.ReportMetric(q(lat, 0.5), "quiet-p50-µs")
			b.ReportMetric(q(lat, 0.99), "quiet-p99-µs")
			b.ReportMetric(q(waits, 0.5), "quiet-buffer-p50-µs")
			b.ReportMetric(q(waits, 0.99), "quiet-buffer-p99-µs")
			b.ReportMetric(float64(noisyBytes.Load())/elapsed.Seconds()/1e6, "noisy-MB/s")
			b.ReportMetric(float64(peak), "peak-pool-B")
			if peak > sc.budget {
				b.Errorf("the pool held %d bytes, over its budget of %d", peak, sc.budget)
			}
		})
	}
}
