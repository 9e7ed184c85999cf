package integration

// Appendable objects (zonal buckets), objup and the official client side by
// side in one run, against a server in another process: the sink
// (fakes/cmd/gcssink, which keeps no bytes) when OBJUP_BENCH_SERVER=sink,
// else fakegcs, with a zonal bucket, on loopback and behind a 2 ms path.
//
//	go test -run '^$' -bench 'Append' -benchmem -count 6 ./integration/ | tee integration/testdata/append.txt
//
// BenchmarkAppendFlush: Write 1 KiB and Flush, one op each: the flush
// latency (p50-us, p99-us) and client CPU per append.
// BenchmarkAppendRate: 1 KiB appends on one stream with a Flush every 1,
// 16 or 256 appends: appends/s and CPU per append.
// BenchmarkAppendWriters: 1, 64 and 512 open writers on one client, each
// appending 1 KiB and flushing in turn: appends/s over all, p99, the
// goroutines each open writer adds, and the heap each idle open writer
// holds after one Flush.
// BenchmarkAppendUploadMany: 1 KiB objects written as appendable objects,
// 64 at a time: objects/s.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"golang.org/x/sync/errgroup"

	"github.com/objup/objup/uploader"
)

// appendServer starts the benchmarks' server in another process, with a
// zonal bucket, behind a path of rtt, and returns its gRPC address.
func appendServer(b *testing.B, rtt time.Duration) (string, func()) {
	args := []string{"-zonal-bucket", appendBucket}
	if rtt > 0 {
		args = append(args, "-rtt", rtt.String())
	}
	if appendOnSink() {
		return startSink(b, args...)
	}
	return startExternalFake(b, args...)
}

// appendBucket is the zonal bucket of the appendable benchmarks.
const appendBucket = "zonal-bench"

// appender is one client's appendable writer, as the benchmarks drive it.
type appender interface {
	Write(p []byte) (int, error)
	flush(ctx context.Context) (int64, error)
	Close() error
}

type objupAppender struct{ *uploader.Writer }

func (a objupAppender) flush(ctx context.Context) (int64, error) { return a.Flush(ctx) }

type officialAppender struct{ *storage.Writer }

func (a officialAppender) flush(context.Context) (int64, error) { return a.Flush() }

// appendClients dials objup and the official client to addr and returns
// how each opens an appendable writer, finalized on Close.
func appendClients(b *testing.B, addr string) (map[string]func(ctx context.Context, name string) (appender, error), func()) {
	ours, official := benchClients(b, addr)
	open := map[string]func(ctx context.Context, name string) (appender, error){
		"objup": func(ctx context.Context, name string) (appender, error) {
			w, err := ours.NewWriter(ctx, appendBucket, name, uploader.WithAppendable())
			return objupAppender{w}, err
		},
		"official": func(ctx context.Context, name string) (appender, error) {
			w := official.Bucket(appendBucket).Object(name).NewWriter(ctx)
			w.Append, w.FinalizeOnClose = true, true
			return officialAppender{w}, nil
		},
	}
	return open, func() { ours.Close(); official.Close() }
}

var appendClientNames = []string{"objup", "official"}

// appendRTTs are the paths of the appendable benchmarks.
var appendRTTs = []time.Duration{0, 2 * time.Millisecond}

// latencies collects durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-us")
	b.ReportMetric(at(0.99), "p99-us")
}

// BenchmarkAppendFlush writes 1 KiB and flushes it, one op each.
func BenchmarkAppendFlush(b *testing.B) {
	data := payload(1<<10, 1)
	for _, rtt := range appendRTTs {
		addr, stop := appendServer(b, rtt)
		open, closeClients := appendClients(b, addr)
		for _, name := range appendClientNames {
			b.Run(fmt.Sprintf("rtt=%v/client=%s", rtt, name), func(b *testing.B) {
				ctx := context.Background()
				w, err := open[name](ctx, fmt.Sprintf("flush-%s-%v-%d", name, rtt, b.N))
				if err != nil {
					b.Fatal(err)
				}
				lat := make(latencies, 0, b.N)
				b.ReportAllocs()
				cpu := startCPU()
				for b.Loop() {
					start := time.Now()
					if _, err := w.Write(data); err != nil {
						b.Fatal(err)
					}
					if _, err := w.flush(ctx); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				cpu.report(b, 0)
				lat.report(b)
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
		closeClients()
		stop()
	}
}

// BenchmarkAppendRate appends 1 KiB at a time on one stream, with a Flush
// every 1, 16 or 256 appends; an op is one append.
func BenchmarkAppendRate(b *testing.B) {
	data := payload(1<<10, 2)
	for _, rtt := range appendRTTs {
		addr, stop := appendServer(b, rtt)
		open, closeClients := appendClients(b, addr)
		for _, every := range []int{1, 16, 256} {
			for _, name := range appendClientNames {
				b.Run(fmt.Sprintf("rtt=%v/flush-every=%d/client=%s", rtt, every, name), func(b *testing.B) {
					ctx := context.Background()
					w, err := open[name](ctx, fmt.Sprintf("rate-%s-%v-%d-%d", name, rtt, every, b.N))
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					cpu := startCPU()
					start := time.Now()
					i := 0
					for b.Loop() {
						if _, err := w.Write(data); err != nil {
							b.Fatal(err)
						}
						if i++; i%every == 0 {
							if _, err := w.flush(ctx); err != nil {
								b.Fatal(err)
							}
						}
					}
					if _, err := w.flush(ctx); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
					cpu.report(b, 0)
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
		closeClients()
		stop()
	}
}

// BenchmarkAppendWriters keeps n appendable writers open on one client;
// an op is one append of 1 KiB and its Flush on one writer, the writers
// taking turns from n goroutines (each writer is used by one goroutine).
// Before the timed appends, every writer flushes once and the heap and
// goroutines are measured: what an idle open writer costs.
func BenchmarkAppendWriters(b *testing.B) {
	data := payload(1<<10, 3)
	addr, stop := appendServer(b, 0)
	defer stop()
	open, closeClients := appendClients(b, addr)
	defer closeClients()
	for _, n := range []int{1, 64, 512} {
		for _, name := range appendClientNames {
			b.Run(fmt.Sprintf("writers=%d/client=%s", n, name), func(b *testing.B) {
				ctx := context.Background()
				runtime.GC()
				heap0, g0 := heapInUse(), runtime.NumGoroutine()
				ws := make([]appender, n)
				for i := range ws {
					w, err := open[name](ctx, fmt.Sprintf("writers-%s-%d-%d-%d", name, n, b.N, i))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := w.Write(data); err != nil {
						b.Fatal(err)
					}
					if _, err := w.flush(ctx); err != nil {
						b.Fatal(err)
					}
					ws[i] = w
				}
				runtime.GC()
				heap1, g1 := heapInUse(), runtime.NumGoroutine()

				var mu sync.Mutex
				lat := make(latencies, 0, b.N)
				per := (b.N + n - 1) / n
				start := time.Now()
				cpu := startCPU()
				b.ResetTimer()
				var g errgroup.Group
				for i := range ws {
					w := ws[i]
					g.Go(func() error {
						mine := make(latencies, 0, per)
						for range per {
							t0 := time.Now()
							if _, err := w.Write(data); err != nil {
								return err
							}
							if _, err := w.flush(ctx); err != nil {
								return err
							}
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
						return nil
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(per*n)/time.Since(start).Seconds(), "appends/s")
				cpu.report(b, 0)
				lat.report(b)
				b.ReportMetric(float64(heap1-heap0)/float64(n), "idle-heap-B/writer")
				b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/writer")
				for _, w := range ws {
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// heapInUse returns the bytes of live heap objects.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkAppendUploadMany writes 1 KiB objects as appendable objects, 64
// at a time: objup's UploadMany, and the official client's Writer (Append,
// FinalizeOnClose) from 64 goroutines. An op is one object.
func BenchmarkAppendUploadMany(b *testing.B) {
	const concurrency = 64
	data := payload(1<<10, 4)
	for _, rtt := range appendRTTs {
		addr, stop := appendServer(b, rtt)
		ctx := context.Background()
		ours, official := benchClients(b, addr)
		b.Run(fmt.Sprintf("rtt=%v/client=objup", rtt), func(b *testing.B) {
			items := make([]uploader.Item, b.N)
			for i := range items {
				items[i] = uploader.Item{Name: fmt.Sprintf("many/objup/%d/%d", b.N, i), Data: data, Options: []uploader.WriterOption{uploader.WithAppendable()}}
			}
			b.ReportAllocs()
			cpu := startCPU()
			start := time.Now()
			res, err := ours.UploadMany(ctx, appendBucket, items, uploader.WithConcurrency(concurrency))
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "objects/s")
			cpu.report(b, 0)
		})
		b.Run(fmt.Sprintf("rtt=%v/client=official", rtt), func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU()
			start := time.Now()
			var g errgroup.Group
			g.SetLimit(concurrency)
			for i := range b.N {
				g.Go(func() error {
					w := official.Bucket(appendBucket).Object(fmt.Sprintf("many/official/%d/%d", b.N, i)).NewWriter(ctx)
					w.Append, w.FinalizeOnClose = true, true
					if _, err := w.Write(data); err != nil {
						w.Close()
						return err
					}
					return w.Close()
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "objects/s")
			cpu.report(b, 0)
		})
		ours.Close()
		official.Close()
		stop()
	}
}

// appendOnSink reports whether the appendable benchmarks run on the sink
// (OBJUP_BENCH_SERVER=sink).
func appendOnSink() bool { return os.Getenv("OBJUP_BENCH_SERVER") == "sink" }
