package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// BenchmarkMultipartUpload runs a parallel upload through the XML API's
// multipart upload beside the parallel composite upload and one stream,
// objup's gRPC client against fakegcs (in another process, which stores
// every byte) behind a simulated path of each RTT in OBJUP_BENCH_RTTS
// (default 20ms,50ms) with 100 MB/s per connection, for objects of 1 GiB
// and 4 GiB (OBJUP_BENCH_SIZES, in MiB, sets others, such as 256,1024).
// With OBJUP_BENCH_PYTHON naming a python3 that has google-cloud-storage,
// Python's transfer_manager.upload_chunks_concurrently (its defaults: 32
// MiB parts, 8 worker processes) uploads the same file on the same path;
// its CPU and peak memory are its processes'. objects counts the objects
// the bucket wrote per upload (parts, composes and the object itself).
func BenchmarkMultipartUpload(b *testing.B) {
	if os.Getenv("OBJUP_BENCH_RTTS") == "" {
		b.Setenv("OBJUP_BENCH_RTTS", "20ms,50ms")
	}
	sizes := []int{1 << 30, 4 << 30}
	if v := os.Getenv("OBJUP_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			var mib int
			if _, err := fmt.Sscanf(f, "%d", &mib); err != nil {
				b.Fatalf("OBJUP_BENCH_SIZES=%q: %v", v, err)
			}
			sizes = append(sizes, mib<<20)
		}
	}
	// The fake keeps every object in memory: one object of each client
	// at once (each upload deletes the object before it writes it again),
	// and a fake of its own for each size and RTT.
	b.Setenv("GOMEMLIMIT", "12GiB")
	for _, rtt := range benchRTTs(b) {
		for _, size := range sizes {
			addr, httpURL, stop := startExternalFakeBoth(b, "-rtt", rtt.String(), "-bandwidth", "100MB/s", "-max-streams", "100")
			ours, err := uploader.NewClient(context.Background(), append(dialTo(addr), uploader.WithXMLEndpoint(httpURL))...)
			if err != nil {
				b.Fatal(err)
			}
			data := payload(size, uint64(size))
			sizeName := fmt.Sprintf("%dMiB", size>>20)
			upload := func(opts ...uploader.WriterOption) uploadFunc {
				return func(ctx context.Context, name string, data []byte) error {
					deleteBenchObject(b, httpURL, name)
					_, err := ours.Upload(ctx, benchBucket, name, bytes.NewReader(data), opts...)
					return err
				}
			}
			via := func(m uploader.ParallelMethod) uploadFunc {
				return upload(uploader.WithParallelUpload(uploader.ParallelUpload{Method: m}))
			}
			clients := []struct {
				name string
				up   uploadFunc
			}{
				{"objup-multipart", via(uploader.ViaMultipart)},
				{"objup-composite", via(uploader.ViaCompose)},
				{"objup-single", upload()},
			}
			for _, cl := range clients {
				b.Run(fmt.Sprintf("size=%s/rtt=%v/client=%s", sizeName, rtt, cl.name), func(b *testing.B) {
					name := "multipart/" + sizeName + "/" + cl.name
					if err := cl.up(context.Background(), name, data); err != nil {
						b.Fatal(err)
					}
					if p, ok := experimental.Allocator(ours).(*pool.Pool); ok {
						stop := startPeakPool(p)
						defer func() { b.ReportMetric(float64(stop()), "peak-pool-B") }()
					}
					before := objectWrites(b, httpURL)
					runUploads(b, cl.up, name, data)
					b.ReportMetric(float64(objectWrites(b, httpURL)-before)/float64(b.N), "objects/op")
				})
				deleteBenchObject(b, httpURL, "multipart/"+sizeName+"/"+cl.name)
			}
			if py := os.Getenv("OBJUP_BENCH_PYTHON"); py != "" {
				b.Run(fmt.Sprintf("size=%s/rtt=%v/client=python-transfer-manager", sizeName, rtt), func(b *testing.B) {
					benchPython(b, py, httpURL, data)
				})
			}
			ours.Close()
			stop()
		}
	}
}

// deleteBenchObject deletes object name of the benchmarks' bucket on the fake at
// httpURL, if it exists.
func deleteBenchObject(b *testing.B, httpURL, name string) {
	req, err := http.NewRequest(http.MethodDelete, httpURL+"/storage/v1/b/"+benchBucket+"/o/"+url.PathEscape(name), nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// objectWrites is how many object writes the fake at httpURL served: one-shot
// writes, sessions started (each stores one object), composes and
// multipart completes.
func objectWrites(b *testing.B, httpURL string) int64 {
	resp, err := http.Get(httpURL + "/_objup/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Calls []struct {
			Method, Code string
			Count        int64
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, c := range st.Calls {
		switch c.Method {
		case "WriteObject", "StartResumableWrite", "ComposeObject", "xml.multipart.complete":
			if c.Code == "OK" {
				n += c.Count
			}
		}
	}
	return n
}

// pythonUpload is the Python client's upload_chunks_concurrently of a file
// to gs://BUCKET/OBJECT through the emulator STORAGE_EMULATOR_HOST names.
const pythonUpload = `
import sys
from google.cloud import storage
from google.cloud.storage import transfer_manager
client = storage.Client(project="test")
blob = client.bucket(sys.argv[2]).blob(sys.argv[3])
transfer_manager.upload_chunks_concurrently(sys.argv[1], blob)
`

// benchPython uploads data with Python's transfer manager, b.N times,
// and reports its processes' CPU and peak memory.
func benchPython(b *testing.B, py, httpURL string, data []byte) {
	dir := b.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	var cpu time.Duration
	var peak int64
	for b.Loop() {
		deleteBenchObject(b, httpURL, "multipart/python")
		cmd := exec.Command(py, "-c", pythonUpload, file, benchBucket, "multipart/python")
		cmd.Env = append(os.Environ(), "STORAGE_EMULATOR_HOST="+httpURL)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("python: %v\n%s", err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		peak = max(peak, ru.Maxrss<<10)
	}
	// RUSAGE of a child counts the children it waited for: the worker
	// processes' CPU is in it, their memory is not (Maxrss is the largest
	// single process).
	b.ReportMetric(cpu.Seconds()/(float64(len(data))*float64(b.N)/(1<<30)), "cpu-s/GiB")
	b.ReportMetric(float64(peak), "peak-rss-B")
}
