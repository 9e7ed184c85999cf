package integration

// Uploads at a distance: the sink (fakes/cmd/gcssink, in another process)
// behind a simulated path of 0 to 100 ms round trip (package fakes/link),
// with GCS's cap of 100 streams per connection, and side by side in one run
// objup with its defaults, the official gRPC writer (its default 16 MiB
// chunks, and 256 KiB chunks) and the bare stream (every message encoded
// beforehand, no per-chunk flush: what one stream can carry at most).
//
//	go test -run '^$' -bench 'Distance' -benchtime 3x -count 1 -timeout 60m ./integration/ | tee integration/testdata/distance.txt
//	go run ./integration/benchchart -o docs/distance.svg integration/testdata/distance.txt
//
// OBJUP_BENCH_RTTS narrows the round-trip times (a comma-separated list of
// durations; default 0s,10ms,20ms,50ms,100ms), OBJUP_BENCH_MANY the objects
// of the UploadMany runs (default 10000). The throughput is MB/s (or
// objects/s), with client CPU per GiB (or per object) and peak heap.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// benchRTTs are the round-trip times of the distance benchmarks.
func benchRTTs(b *testing.B) []time.Duration {
	v := os.Getenv("OBJUP_BENCH_RTTS")
	if v == "" {
		v = "0s,10ms,20ms,50ms,100ms"
	}
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("OBJUP_BENCH_RTTS: %v", err)
		}
		out = append(out, d)
	}
	return out
}

// distanceClients dials objup, the official client and a bare connection to
// addr, and returns them with a function that closes them.
func distanceClients(b *testing.B, addr string) (*uploader.Client, *storage.Client, *grpc.ClientConn, func()) {
	ours, official := benchClients(b, addr)
	raw, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	return ours, official, raw, func() { ours.Close(); official.Close(); raw.Close() }
}

// BenchmarkDistance uploads one object at a time, 64 MiB and 256 MiB.
func BenchmarkDistance(b *testing.B) {
	for _, rtt := range benchRTTs(b) {
		addr, stop := startSink(b, "-rtt", rtt.String(), "-max-streams", "100")
		ours, official, raw, closeAll := distanceClients(b, addr)
		for _, size := range []struct {
			name string
			n    int
		}{{"64MiB", 64 << 20}, {"256MiB", 256 << 20}} {
			data := payload(size.n, uint64(size.n))
			officialWith := func(chunkSize int) uploadFunc { return officialUpload(official, chunkSize) }
			clients := []struct {
				name string
				up   uploadFunc
			}{
				{"objup", func(ctx context.Context, name string, data []byte) error {
					_, err := ours.Upload(ctx, benchBucket, name, bytes.NewReader(data))
					return err
				}},
				{"official-default", officialWith(16 << 20)},
				{"official-256KiB", officialWith(256 << 10)},
				{"bare-stream", newLimitUpload(raw, data)},
			}
			for _, cl := range clients {
				b.Run(fmt.Sprintf("size=%s/rtt=%v/client=%s", size.name, rtt, cl.name), func(b *testing.B) {
					ctx := context.Background()
					name := "distance/" + size.name + "/" + cl.name
					if err := cl.up(ctx, name, data); err != nil { // warm the connection
						b.Fatal(err)
					}
					runUploads(b, cl.up, name, data)
				})
			}
		}
		closeAll()
		stop()
	}
}

// BenchmarkDistanceMany uploads many 4 KiB objects at a concurrency of 64
// and 512: objup's UploadMany against the official client driven by an
// errgroup at the same concurrency (single-request uploads, ChunkSize 0),
// both with their default connections.
func BenchmarkDistanceMany(b *testing.B) {
	n := 10000
	if v := os.Getenv("OBJUP_BENCH_MANY"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("OBJUP_BENCH_MANY=%q: want a count", v)
		}
	}
	data := payload(4<<10, 4)
	for _, rtt := range benchRTTs(b) {
		addr, stop := startSink(b, "-rtt", rtt.String(), "-max-streams", "100")
		ours, official, _, closeAll := distanceClients(b, addr)
		for _, conc := range []int{64, 512} {
			items := make([]uploader.Item, n)
			for i := range items {
				items[i] = uploader.Item{Name: fmt.Sprintf("many/%d", i), Data: data}
			}
			clients := []struct {
				name string
				run  func(ctx context.Context) error
			}{
				{"objup", func(ctx context.Context) error {
					_, err := ours.UploadMany(ctx, benchBucket, items, uploader.WithConcurrency(conc))
					return err
				}},
				{"official", func(ctx context.Context) error {
					g, ctx := errgroup.WithContext(ctx)
					g.SetLimit(conc)
					for i := range items {
						g.Go(func() error {
							w := official.Bucket(benchBucket).Object(items[i].Name).NewWriter(ctx)
							// One request per object, as the official
							// docs advise for small objects: its default
							// 16 MiB buffer per Writer would take 8 GiB at
							// a concurrency of 512.
							w.ChunkSize = 0
							if _, err := w.Write(data); err != nil {
								w.Close()
								return err
							}
							return w.Close()
						})
					}
					return g.Wait()
				}},
			}
			for _, cl := range clients {
				b.Run(fmt.Sprintf("conc=%d/rtt=%v/client=%s", conc, rtt, cl.name), func(b *testing.B) {
					ctx := context.Background()
					b.ReportAllocs()
					peak := startPeakHeap()
					cpu := startCPU()
					start := time.Now()
					for b.Loop() {
						if err := cl.run(ctx); err != nil {
							b.Fatal(err)
						}
					}
					elapsed := time.Since(start)
					objects := float64(b.N * n)
					b.ReportMetric(objects/elapsed.Seconds(), "objects/s")
					b.ReportMetric(cpu.seconds()/objects*1e6, "cpu-µs/object")
					b.ReportMetric(float64(peak()), "peak-heap-B")
				})
			}
		}
		closeAll()
		stop()
	}
}

// BenchmarkDistanceBudget runs 8 uploads of 256 MiB at once through a path
// of 50 ms under a pool budget of 16 MiB: the budget must hold (peak pool
// bytes) and none may starve (the slowest upload's time against the
// fastest's).
func BenchmarkDistanceBudget(b *testing.B) {
	addr, stop := startSink(b, "-rtt", "50ms", "-max-streams", "100")
	defer stop()
	const budget = 16 << 20
	p, err := pool.New(pool.WithBudget(budget))
	if err != nil {
		b.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		uploader.WithPool(p))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	data := payload(256<<20, 9)
	b.Run("uploads=8/size=256MiB/rtt=50ms/budget=16MiB", func(b *testing.B) {
		stopPeak := startPeakPool(p)
		b.SetBytes(8 * int64(len(data)))
		worst := 0.0
		for b.Loop() {
			var g errgroup.Group
			times := make([]time.Duration, 8)
			for i := range 8 {
				g.Go(func() error {
					t0 := time.Now()
					_, err := c.Upload(context.Background(), benchBucket, fmt.Sprintf("budget/%d", i), bytes.NewReader(data))
					times[i] = time.Since(t0)
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			slices.Sort(times)
			worst = max(worst, times[7].Seconds()/times[0].Seconds())
		}
		peak := stopPeak()
		b.ReportMetric(float64(peak), "peak-pool-B")
		b.ReportMetric(worst, "slowest/fastest")
		if peak > budget {
			b.Errorf("the pool held %d bytes, over its budget of %d", peak, budget)
		}
	})
}
