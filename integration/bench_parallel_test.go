package integration

// Parallel composite uploads at a distance: the sink (fakes/cmd/gcssink
// -compose, in another process: it checks every byte and keeps each
// object's size and CRC32C, so it composes without storing content; with
// OBJUP_BENCH_SERVER=fakegcs, the fake, which stores every byte) behind a
// simulated path of 20 and 50 ms with 100 MB/s per connection, and side by
// side in one run objup's parallel upload (WithParallelUpload, defaults),
// objup's single stream, and the official gRPC writer with
// EnableParallelUpload (its defaults), on its default connection and on a
// pool of 4 connections like objup's.
//
//	go test -run '^$' -bench 'ParallelUpload' -benchtime 3x -count 1 -timeout 60m ./integration/ | tee integration/testdata/parallel.txt
//
// OBJUP_BENCH_RTTS narrows the round-trip times (default 20ms,50ms);
// OBJUP_BENCH_PARTS sets objup's part size and parts at once, as
// "4MiB,8" (default: the option's defaults); OBJUP_BENCH_BANDWIDTH the
// bandwidth of each connection (default 100MB/s; 0 is unlimited).
// Throughput is MB/s, with client CPU per GiB and peak heap.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

func BenchmarkParallelUpload(b *testing.B) {
	if os.Getenv("OBJUP_BENCH_RTTS") == "" {
		b.Setenv("OBJUP_BENCH_RTTS", "20ms,50ms")
	}
	sizes := []struct {
		name string
		n    int
	}{{"256MiB", 256 << 20}, {"1GiB", 1 << 30}}
	datas := make([][]byte, len(sizes))
	for i, s := range sizes {
		datas[i] = payload(s.n, uint64(s.n))
	}
	bw := "100MB/s"
	if v := os.Getenv("OBJUP_BENCH_BANDWIDTH"); v != "" {
		bw = v
	}
	var cfg uploader.ParallelUpload
	if v := os.Getenv("OBJUP_BENCH_PARTS"); v != "" {
		var mib int64
		if _, err := fmt.Sscanf(v, "%dMiB,%d", &mib, &cfg.Parts); err != nil {
			b.Fatalf("OBJUP_BENCH_PARTS=%q: want such as 4MiB,8: %v", v, err)
		}
		cfg.PartSize = mib << 20
	}
	for _, rtt := range benchRTTs(b) {
		args := []string{"-rtt", rtt.String(), "-bandwidth", bw, "-max-streams", "100"}
		var addr string
		var stop func()
		if os.Getenv("OBJUP_BENCH_SERVER") == "fakegcs" {
			addr, stop = startExternalFake(b, args...)
		} else {
			addr, stop = startSink(b, append(args, "-compose")...)
		}
		ours, official, _, closeAll := distanceClients(b, addr)
		// The official client with as many connections as objup's pool:
		// its parallel upload spreads parts over them too.
		official4, err := storage.NewGRPCClient(context.Background(), option.WithEndpoint(addr), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
			option.WithGRPCConnectionPool(experimental.DefaultConnectionPool), storage.WithDisabledClientMetrics())
		if err != nil {
			b.Fatal(err)
		}
		for i, size := range sizes {
			data := datas[i]
			clients := []struct {
				name string
				up   uploadFunc
			}{
				{"objup-parallel", func(ctx context.Context, name string, data []byte) error {
					_, err := ours.Upload(ctx, benchBucket, name, bytes.NewReader(data), uploader.WithParallelUpload(cfg))
					return err
				}},
				{"objup-single", func(ctx context.Context, name string, data []byte) error {
					_, err := ours.Upload(ctx, benchBucket, name, bytes.NewReader(data))
					return err
				}},
				{"official-parallel", officialParallel(official)},
				{"official-parallel-4conns", officialParallel(official4)},
			}
			for _, cl := range clients {
				b.Run(fmt.Sprintf("size=%s/rtt=%v/client=%s", size.name, rtt, cl.name), func(b *testing.B) {
					name := "parallel/" + size.name + "/" + cl.name
					if err := cl.up(context.Background(), name, data); err != nil { // warm the connections and the pool
						b.Fatal(err)
					}
					if cl.name == "objup-single" || cl.name == "objup-parallel" {
						// objup's buffers are the pool's, which the warm-up
						// filled: the memory it needs is the pool's peak in
						// use, beside the heap's.
						if p, ok := experimental.Allocator(ours).(*pool.Pool); ok {
							stop := startPeakPool(p)
							defer func() { b.ReportMetric(float64(stop()), "peak-pool-B") }()
						}
					}
					runUploads(b, cl.up, name, data)
				})
			}
		}
		official4.Close()
		closeAll()
		stop()
	}
}

// officialParallel uploads with the official Writer's parallel upload, its
// defaults.
func officialParallel(c *storage.Client) uploadFunc {
	return func(ctx context.Context, name string, data []byte) error {
		w := c.Bucket(benchBucket).Object(name).NewWriter(ctx)
		w.EnableParallelUpload = true
		w.ParallelUploadConfig = storage.ParallelUploadConfig{}
		if _, err := w.Write(data); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}
}
