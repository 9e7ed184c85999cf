package objupstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/gcs"
	"golang.org/x/sync/errgroup"

	"github.com/objup/objup/adapters/objupstore"
)

// The block benchmarks upload a Thanos-like block, side by side through
// objupstore and through objstore's stock GCS provider, to one fakegcs
// running in another process (so the CPU and heap measured are the
// client's), over the JSON API (objstore's default) and over gRPC.
//
// A block is 1,000 objects of 1 to 64 KiB (the small files of many
// blocks: meta.json, tombstones, small chunk segments) and a few large
// ones, by default of 10, 20 and 40 MiB (chunk segments and the index);
// OBJUP_BENCH_BIG sets their sizes ("10MiB,100MiB", or "none"). Every
// iteration uploads a new block (new names, as a new block ULID would),
// 32 objects at a time, as Thanos's shipper does with its upload
// concurrency.
//
// Reported per block: cpu-ns/op (the client process's user and system
// CPU), B/op and allocs/op, peak-heap-B (the most live heap above the
// heap at the start), failed/op (uploads that returned an error) and
// objects/s.
//
//	go test -run '^$' -bench 'Block' -benchtime 3x ./adapters/objupstore/
//
// BenchmarkBlockCapacity runs the same upload against a bucket that
// admits OBJUP_BENCH_WRITE_RATE object writes a second (default 100,
// fakegcs -write-rate), and reports as well refused/op (writes the fake
// refused for the bucket's rate: attempts over capacity) and
// offered-x-capacity (writes attempted a second over the capacity).

const (
	benchBucket      = "bench-blocks"
	blockSmall       = 1000
	blockConcurrency = 32
)

// blockObject is one object of a block.
type blockObject struct {
	name string
	size int
}

// block returns the objects of block i of uploader up: the same sizes for
// every block, names of their own.
func block(b *testing.B, up string, i int) []blockObject {
	r := rand.New(rand.NewPCG(1, 2))
	id := fmt.Sprintf("%s/01JBENCH%018d", up, i)
	objs := make([]blockObject, 0, blockSmall+4)
	for j := range blockSmall {
		objs = append(objs, blockObject{fmt.Sprintf("%s/small/%06d", id, j), 1<<10 + r.IntN(63<<10+1)})
	}
	for j, size := range bigSizes(b) {
		objs = append(objs, blockObject{fmt.Sprintf("%s/chunks/%06d", id, j+1), size})
	}
	return objs
}

// bigSizes are the sizes of a block's large objects: OBJUP_BENCH_BIG, or
// 10, 20 and 40 MiB.
func bigSizes(b *testing.B) []int {
	v := os.Getenv("OBJUP_BENCH_BIG")
	switch v {
	case "":
		return []int{10 << 20, 20 << 20, 40 << 20}
	case "none":
		return nil
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscanf(f, "%dMiB", &n); err != nil || n <= 0 {
			b.Fatalf("OBJUP_BENCH_BIG=%q: want sizes such as 10MiB,100MiB, or none", v)
		}
		sizes = append(sizes, n<<20)
	}
	return sizes
}

// blockData is the bytes every object is a prefix of.
func blockData(b *testing.B) []byte {
	n := 64 << 10
	for _, s := range bigSizes(b) {
		n = max(n, s)
	}
	data := make([]byte, n)
	rand.NewChaCha8([32]byte{7}).Read(data)
	return data
}

// BenchmarkBlock uploads a block per iteration with each bucket, on an
// unlimited bucket.
func BenchmarkBlock(b *testing.B) {
	benchBlocks(b, nil)
}

// BenchmarkBlockCapacity uploads a block per iteration with each bucket,
// on a bucket with a write capacity.
func BenchmarkBlockCapacity(b *testing.B) {
	rate := os.Getenv("OBJUP_BENCH_WRITE_RATE")
	if rate == "" {
		rate = "100"
	}
	benchBlocks(b, []string{"-write-rate", rate})
}

func benchBlocks(b *testing.B, fakeArgs []string) {
	data := blockData(b)
	for _, transport := range []string{"json", "grpc"} {
		fk := startFakegcs(b, fakeArgs...)
		for _, impl := range []string{"objupstore", "stock"} {
			b.Run("transport="+transport+"/bucket="+impl, func(b *testing.B) {
				bkt := benchBucketFor(b, fk, transport, impl)
				defer bkt.Close()
				runBlocks(b, bkt, impl, fk, data)
			})
		}
		fk.stop()
	}
}

// benchBucketFor opens impl's bucket on fk over transport.
func benchBucketFor(b *testing.B, fk *fakegcs, transport, impl string) objstore.Bucket {
	s := server{name: "fakegcs", grpc: fk.grpc, http: fk.http}
	cfg := emulatorConfig(b, s, transport)
	cfg.Bucket = benchBucket
	ctx := context.Background()
	var (
		bkt objstore.Bucket
		err error
	)
	if impl == "stock" {
		bkt, err = gcs.NewBucketWithConfig(ctx, log.NewNopLogger(), cfg, "bench", nil)
	} else {
		bkt, err = objupstore.NewBucketWithConfig(ctx, log.NewNopLogger(), cfg, "bench")
	}
	if err != nil {
		b.Fatal(err)
	}
	return bkt
}

// runBlocks uploads one block per iteration and reports the metrics.
func runBlocks(b *testing.B, bkt objstore.Bucket, impl string, fk *fakegcs, data []byte) {
	ctx := context.Background()
	b.ReportAllocs()
	before := fk.capacity(b)
	var failed, objects atomic.Int64
	var firstErr sync.Once
	runtime.GC()
	peak := startPeakHeap()
	cpu := processCPU()
	start := time.Now()
	i := 0
	for b.Loop() {
		var g errgroup.Group
		g.SetLimit(blockConcurrency)
		for _, o := range block(b, impl, i) {
			g.Go(func() error {
				objects.Add(1)
				if err := bkt.Upload(ctx, o.name, bytes.NewReader(data[:o.size])); err != nil {
					failed.Add(1)
					firstErr.Do(func() { b.Logf("first failed upload: %v", err) })
				}
				return nil
			})
		}
		g.Wait()
		i++
	}
	elapsed := time.Since(start)
	used := processCPU() - cpu
	b.ReportMetric(float64(peak()), "peak-heap-B")
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
	b.ReportMetric(float64(objects.Load())/elapsed.Seconds(), "objects/s")
	if before != nil {
		after := fk.capacity(b)
		refused := after.refused() - before.refused()
		attempts := refused + after.Admitted - before.Admitted
		b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
		b.ReportMetric(float64(attempts)/elapsed.Seconds()/after.Rate, "offered-x-capacity")
	}
}

// fakegcs is fakes/cmd/fakegcs running in another process.
type fakegcs struct {
	grpc, http string
	capped     bool // it has a write capacity
	stop       func()
}

var (
	fakegcsOnce sync.Once
	fakegcsBin  string
	fakegcsErr  error
)

// startFakegcs builds fakegcs once and runs it on 127.0.0.1 with
// benchBucket and args.
func startFakegcs(b *testing.B, args ...string) *fakegcs {
	fakegcsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "objupstore-bench")
		if err != nil {
			fakegcsErr = err
			return
		}
		fakegcsBin = filepath.Join(dir, "fakegcs")
		out, err := exec.Command("go", "build", "-C", filepath.Join("..", "..", "fakes"), "-o", fakegcsBin, "./cmd/fakegcs").CombinedOutput()
		if err != nil {
			fakegcsErr = fmt.Errorf("go build fakegcs: %v\n%s", err, out)
		}
	})
	if fakegcsErr != nil {
		b.Fatal(fakegcsErr)
	}
	cmd := exec.Command(fakegcsBin, append([]string{"-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-bucket", benchBucket, "-call-log", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	fk := &fakegcs{capped: len(args) > 0, stop: func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "grpc "); ok {
			fk.grpc = a
		}
		if u, ok := strings.CutPrefix(sc.Text(), "http "); ok {
			fk.http = u
		}
		if fk.grpc != "" && fk.http != "" {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return fk
		}
	}
	fk.stop()
	b.Fatal("fakegcs did not print its addresses")
	return nil
}

// capacityCounts are a bucket's write counts from fakegcs's
// /_objup/stats.
type capacityCounts struct {
	Bucket                                                string
	Rate                                                  float64
	Admitted, RateLimited, Unavailable, ObjectRateLimited int64
}

func (c *capacityCounts) refused() int64 { return c.RateLimited + c.Unavailable + c.ObjectRateLimited }

// capacity returns benchBucket's counts, or nil when the fake has no
// capacity.
func (fk *fakegcs) capacity(b *testing.B) *capacityCounts {
	u, err := url.JoinPath(fk.http, "/_objup/stats")
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Capacity []capacityCounts }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		b.Fatal(err)
	}
	for _, c := range body.Capacity {
		if c.Bucket == benchBucket {
			return &c
		}
	}
	if !fk.capped {
		return nil
	}
	return &capacityCounts{Bucket: benchBucket} // nothing written yet
}

// startPeakHeap samples the live heap every millisecond until the
// returned function is called, which returns the peak above the heap at
// the start.
func startPeakHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if n := read(); n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		if p := peak.Load(); p > base {
			return p - base
		}
		return 0
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
