package integration

// Side-by-side upload benchmarks: objup against the official Go client's gRPC
// writer, on the same fake, in one run. Compare with benchstat, e.g.
//
//	go test -run '^$' -bench 'Upload' -benchmem -count 6 ./integration/ > bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /client bench.txt
//
// BenchmarkUploadInProcess runs the fake in this process (end to end: B/op
// includes the server's work); BenchmarkUploadClientOnly runs it as a separate
// process (fakes/cmd/fakegcs), so B/op and allocs/op count the client alone.
// With OBJUP_BENCH_SERVER=sink it runs fakes/cmd/gcssink instead: the same
// write checks, and the content dropped, so the server takes less of the
// machine the client shares with it.

import (
	"bufio"
	"context"
	"fmt"
	"hash/crc32"
	"io"
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

	"cloud.google.com/go/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

const benchBucket = "bench"

var benchSizes = []struct {
	name string
	n    int
}{
	{"1KiB", 1 << 10},
	{"16KiB", 16 << 10},
	{"256KiB", 256 << 10},
	{"4MiB", 4 << 20},
	{"64MiB", 64 << 20},
}

func BenchmarkUploadInProcess(b *testing.B) {
	srv, err := fakes.New(fakes.WithBucket(benchBucket))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	benchUploads(b, srv.GRPCAddr(), "fakes.New, in this process")
}

func BenchmarkUploadClientOnly(b *testing.B) {
	addr, server, stop := startClientOnlyServer(b)
	defer stop()
	benchUploads(b, addr, server)
}

var (
	loggedServers sync.Map // the servers benchUploads named in its log
	gcssinkBin    = sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "objup-gcssink")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, "gcssink")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/objup/objup/fakes/cmd/gcssink").CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build gcssink: %v\n%s", err, out)
		}
		return bin, nil
	})
)

// startClientOnlyServer runs BenchmarkUploadClientOnly's server in a
// separate process: fakegcs, or gcssink when OBJUP_BENCH_SERVER=sink. It
// returns the server's address, what it is, and how to stop it.
func startClientOnlyServer(b *testing.B) (string, string, func()) {
	switch env := os.Getenv("OBJUP_BENCH_SERVER"); env {
	case "", "fakegcs":
		addr, stop := startExternalFake(b)
		return addr, "fakes/cmd/fakegcs, in another process", stop
	case "sink":
	default:
		b.Fatalf("OBJUP_BENCH_SERVER=%q: want fakegcs (the default) or sink", env)
	}
	addr, stop := startSink(b)
	return addr, "fakes/cmd/gcssink (OBJUP_BENCH_SERVER=sink), in another process", stop
}

// startSink runs fakes/cmd/gcssink in another process, with its flags
// args, and returns its gRPC address and how to stop it.
func startSink(b *testing.B, args ...string) (string, func()) {
	bin, err := gcssinkBin()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-grpc", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	sc := bufio.NewScanner(stdout)
	if sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "grpc "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return addr, stop
		}
	}
	stop()
	b.Fatal("gcssink did not print its gRPC address")
	return "", nil
}

// uploadFunc uploads data as object name once.
type uploadFunc func(ctx context.Context, name string, data []byte) error

// benchUploads runs the side-by-side uploads against the server at addr,
// which server describes in the log.
func benchUploads(b *testing.B, addr, server string) {
	ours, official := benchClients(b, addr)
	defer ours.Close()
	defer official.Close()
	raw, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()

	officialWith := func(chunkSize int) uploadFunc { return officialUpload(official, chunkSize) }
	objup := func(ctx context.Context, name string, data []byte) error {
		w, err := ours.NewWriter(ctx, benchBucket, name)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}

	sizes := benchSizes
	if strings.Contains(server, "gcssink") {
		// The sink keeps nothing, so a 256 MiB object costs it no memory.
		sizes = append(sizes[:len(sizes):len(sizes)], struct {
			name string
			n    int
		}{"256MiB", 256 << 20})
	}
	for _, size := range sizes {
		data := payload(size.n, uint64(size.n))
		limit := newLimitUpload(raw, data)
		clients := []struct {
			name string
			up   uploadFunc
		}{
			{"objup", objup},
			{"official-default", officialWith(16 << 20)},
			{"official-256KiB", officialWith(256 << 10)},
		}
		if size.n <= 256<<10 {
			clients = append(clients, struct {
				name string
				up   uploadFunc
			}{"official-0", officialWith(0)})
		}
		clients = append(clients, struct {
			name string
			up   uploadFunc
		}{"limit", limit})
		for _, cl := range clients {
			b.Run(fmt.Sprintf("size=%s/client=%s", size.name, cl.name), func(b *testing.B) {
				name := "bench/" + size.name + "/" + cl.name
				if _, logged := loggedServers.LoadOrStore(server, true); !logged {
					b.Logf("server: %s", server)
				}
				runUploads(b, cl.up, name, data)
			})
		}
	}
}

// officialUpload uploads with the official client's Writer and the given
// ChunkSize.
func officialUpload(c *storage.Client, chunkSize int) uploadFunc {
	return func(ctx context.Context, name string, data []byte) error {
		w := c.Bucket(benchBucket).Object(name).NewWriter(ctx)
		w.ChunkSize = chunkSize
		if _, err := w.Write(data); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}
}

// startPeakPool samples p's bytes in use every millisecond until the
// returned function is called, which returns the most it saw.
func startPeakPool(p *pool.Pool) func() int64 {
	return startPeak(func() int64 { return p.Stats().InUseBytes })
}

// startPeak samples read every millisecond until the returned function is
// called, which returns the most it read.
func startPeak(read func() int64) func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
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
	return func() int64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// runUploads is the body of an upload benchmark: up uploads data as name
// once per iteration, and the benchmark reports the throughput, the
// allocations, the client's CPU and its peak heap.
func runUploads(b *testing.B, up uploadFunc, name string, data []byte) {
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	peak := startPeakHeap()
	cpu := startCPU()
	for b.Loop() {
		if err := up(ctx, name, data); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, int64(len(data)))
	b.ReportMetric(float64(peak()), "peak-heap-B")
}

// startPeakHeap samples the live heap every millisecond until the returned
// function is called, which reports the peak above the heap at the start: the
// memory a client needs at once, which allocs/op does not show.
func startPeakHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	runtime.GC()
	base := read()
	stop := startPeak(read)
	return func() uint64 {
		if p := stop(); p > base {
			return uint64(p - base)
		}
		return 0
	}
}

// rawCodec sends pre-encoded messages as they are and decodes replies with
// the proto codec: the bare grpc-go floor.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(*[]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
	}
	return encoding.GetCodecV2("proto").Marshal(v)
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

// newLimitUpload returns an upload that sends the object's bytes as messages
// encoded once, before the benchmark: a single WriteObject for objects up to
// 256 KiB, else StartResumableWrite and one BidiWriteObject stream of 2 MiB
// messages, with no per-chunk flush.
func newLimitUpload(cc *grpc.ClientConn, data []byte) uploadFunc {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	sum := crc32.Checksum(data, castagnoli)
	codec := grpc.ForceCodecV2(rawCodec{})
	var onceMsgs sync.Once
	var msgs [][]byte
	if len(data) <= 256<<10 {
		return func(ctx context.Context, name string, _ []byte) error {
			onceMsgs.Do(func() {
				m, _ := proto.Marshal(&wire.WriteObjectRequest{
					FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
						Resource: &wire.Object{Name: name, Bucket: "projects/_/buckets/" + benchBucket, ContentType: "application/octet-stream"},
					}},
					Data:            &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(sum)}},
					FinishWrite:     true,
					ObjectChecksums: &wire.ObjectChecksums{Crc32C: proto.Uint32(sum)},
				})
				msgs = [][]byte{m}
			})
			var resp wire.WriteObjectResponse
			return cc.Invoke(ctx, wire.MethodWriteObject, &msgs[0], &resp, codec)
		}
	}
	for off := 0; off < len(data); off += 2 << 20 {
		end := min(off+2<<20, len(data))
		req := &wire.BidiWriteObjectRequest{
			WriteOffset: int64(off),
			Data:        &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data[off:end], Crc32C: proto.Uint32(crc32.Checksum(data[off:end], castagnoli))}},
		}
		if end == len(data) {
			req.FinishWrite = true
			req.ObjectChecksums = &wire.ObjectChecksums{Crc32C: proto.Uint32(sum)}
		}
		m, _ := proto.Marshal(req)
		msgs = append(msgs, m)
	}
	return func(ctx context.Context, name string, _ []byte) error {
		var start wire.StartResumableWriteResponse
		err := cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: &wire.WriteObjectSpec{
			Resource: &wire.Object{Name: name, Bucket: "projects/_/buckets/" + benchBucket, ContentType: "application/octet-stream"},
		}}, &start, codec)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := cc.NewStream(ctx, &wire.BidiWriteObjectStream, wire.MethodBidiWriteObject, codec)
		if err != nil {
			return err
		}
		if err := s.SendMsg(&wire.BidiWriteObjectRequest{FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: start.GetUploadId()}}); err != nil {
			return err
		}
		for i := range msgs {
			if err := s.SendMsg(&msgs[i]); err != nil {
				return err
			}
		}
		if err := s.CloseSend(); err != nil {
			return err
		}
		for {
			var resp wire.BidiWriteObjectResponse
			if err := s.RecvMsg(&resp); err != nil {
				if err == io.EOF {
					return fmt.Errorf("stream ended without the object")
				}
				return err
			}
			if resp.GetResource() != nil {
				return nil
			}
		}
	}
}

var (
	fakegcsOnce sync.Once
	fakegcsBin  string
	fakegcsErr  error
)

// startExternalFake builds fakes/cmd/fakegcs once and runs it as a separate
// process on loopback, returning its gRPC address.
func startExternalFake(b testing.TB, args ...string) (string, func()) {
	addr, _, stop := startExternalFakeBoth(b, args...)
	return addr, stop
}

// startExternalFakeBoth is startExternalFake returning the JSON API's URL
// too. args are more flags of fakegcs.
func startExternalFakeBoth(b testing.TB, args ...string) (grpcAddr, httpURL string, stop func()) {
	fakegcsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "objup-fakegcs")
		if err != nil {
			fakegcsErr = err
			return
		}
		fakegcsBin = filepath.Join(dir, "fakegcs")
		out, err := exec.Command("go", "build", "-o", fakegcsBin, "github.com/objup/objup/fakes/cmd/fakegcs").CombinedOutput()
		if err != nil {
			fakegcsErr = fmt.Errorf("go build fakegcs: %v\n%s", err, out)
		}
	})
	if fakegcsErr != nil {
		b.Fatal(fakegcsErr)
	}
	cmd := exec.Command(fakegcsBin, append([]string{"-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-bucket", benchBucket}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "grpc "); ok {
			grpcAddr = a
		}
		if u, ok := strings.CutPrefix(sc.Text(), "http "); ok {
			httpURL = u
		}
		if grpcAddr != "" && httpURL != "" {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return grpcAddr, httpURL, stop
		}
	}
	stop()
	b.Fatal("fakegcs did not print its addresses")
	return "", "", nil
}

// cpuMeter measures the CPU time this process spends (user and system, all
// threads, from getrusage): with the fake in another process, the client's
// own cost, which is steadier than wall time on a shared machine.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter { return cpuMeter{processCPU()} }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seconds returns the process's CPU seconds since the meter started.
func (m cpuMeter) seconds() float64 { return (processCPU() - m.start).Seconds() }

// report adds cpu-ns/op and, for uploads of at least 1 MiB, CPU seconds per
// GiB uploaded.
func (m cpuMeter) report(b *testing.B, size int64) {
	used := processCPU() - m.start
	n := b.N
	if n == 0 {
		return
	}
	b.ReportMetric(float64(used.Nanoseconds())/float64(n), "cpu-ns/op")
	if size >= 1<<20 {
		b.ReportMetric(used.Seconds()/(float64(size)*float64(n)/(1<<30)), "cpu-s/GiB")
	}
}
