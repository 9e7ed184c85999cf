package uploadertest_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"hash/crc32"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// oddAllocator is an Allocator whose buffers are not whole quanta.
type oddAllocator struct{ pool.Allocator }

func (oddAllocator) BufferSize() int { return 1000 }

// TestClientOptionsAlone passes each client option alone to NewClient,
// with a value it must accept and, where there is one, a value it must
// refuse: options are applied in order and validated in one pass, so an
// option's check does not depend on the others.
func TestClientOptionsAlone(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		opt  option.ClientOption
		ok   bool
	}{
		{"WithPool", uploader.WithPool(pool.Default()), true},
		{"WithPool odd buffers", uploader.WithPool(oddAllocator{pool.Default()}), false},
		{"WithChunkSize", uploader.WithChunkSize(512 << 10), true},
		{"WithChunkSize not a quantum", uploader.WithChunkSize(1000), false},
		{"WithRetry", uploader.WithRetry(uploader.Retry{Deadline: time.Second}), true},
		{"WithRetry negative", uploader.WithRetry(uploader.Retry{MaxAttempts: -1}), false},
		{"WithTenantLimits", uploader.WithTenantLimits(uploader.TenantLimits{Uploads: 2}), true},
		{"WithTenantLimits negative", uploader.WithTenantLimits(uploader.TenantLimits{Writes: -1}), false},
		{"WithTelemetry", uploader.WithTelemetry(uploader.Telemetry{Logger: slog.New(slog.DiscardHandler)}), true},
		{"experimental.WithChunksInFlight", experimental.WithChunksInFlight(2), true},
		{"experimental.WithChunksInFlight zero", experimental.WithChunksInFlight(0), false},
		{"experimental.WithMaxInFlight", experimental.WithMaxInFlight(8 << 20), true},
		{"experimental.WithMaxInFlight small", experimental.WithMaxInFlight(1 << 20), false},
		{"experimental.WithKeepalive", experimental.WithKeepalive(20*time.Second, 5*time.Second), true},
		{"experimental.WithKeepalive negative", experimental.WithKeepalive(-time.Second, 0), false},
		{"experimental.WithoutKeepalive", experimental.WithoutKeepalive(), true},
		{"experimental.WithConnectTimeout", experimental.WithConnectTimeout(time.Second), true},
		{"experimental.WithConnectTimeout zero", experimental.WithConnectTimeout(0), false},
		{"experimental.WithWriteRamp", experimental.WithWriteRamp(100, time.Minute), true},
		{"experimental.WithWriteRamp zero", experimental.WithWriteRamp(0, time.Minute), false},
		{"experimental.WithoutAdmission", experimental.WithoutAdmission(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), tc.opt)...)
			if !tc.ok {
				if uploader.CodeOf(err) != codes.InvalidArgument {
					t.Fatalf("NewClient = %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			defer c.Close()
			name := "client/" + tc.name
			if _, err := c.Upload(context.Background(), bucket, name, bytes.NewReader([]byte("x"))); err != nil {
				t.Fatalf("Upload: %v", err)
			}
			if got := e.content(name); string(got) != "x" {
				t.Fatalf("stored %q, want x", got)
			}
		})
	}
	// WithHTTP alone takes the JSON API's endpoint.
	c := httpClient(t, e.srv.HTTPURL())
	if _, err := c.Upload(context.Background(), bucket, "client/WithHTTP", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("WithHTTP: Upload: %v", err)
	}
}

// TestWriterOptionsAlone passes each Writer option alone to NewWriter:
// one it must accept uploads the object; one it must refuse is an
// InvalidArgument error before anything is sent.
func TestWriterOptionsAlone(t *testing.T) {
	e := newEnv(t)
	data := bytes.Repeat([]byte("objup"), 100)
	sum := md5.Sum(data)
	tests := []struct {
		name string
		opt  uploader.WriterOption
		ok   bool
	}{
		{"WithAttrs", uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "text/plain"}), true},
		{"WithAttrs empty metadata key", uploader.WithAttrs(uploader.ObjectAttrs{Metadata: map[string]string{"": "v"}}), false},
		{"WithBuffer", uploader.WithBuffer(make([]byte, pool.Quantum)), true},
		{"WithBuffer nil", uploader.WithBuffer(nil), false},
		{"WithConditions", uploader.WithConditions(uploader.Conditions{DoesNotExist: true}), true},
		{"WithConditions negative", uploader.WithConditions(uploader.Conditions{GenerationMatch: -1}), false},
		{"WithResumable", uploader.WithResumable(), true},
		{"WithAppendable", uploader.WithAppendable(), true},
		{"WithoutFinalize alone", uploader.WithoutFinalize(), false},
		{"WithParallelUpload", uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 1 << 20}), true},
		{"WithParallelUpload negative", uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: -1}), false},
		{"WithProgress", uploader.WithProgress(func(int64) {}), true},
		{"WithSendCRC32C", uploader.WithSendCRC32C(crc32.Checksum(data, castagnoli)), true},
		{"WithSendMD5", uploader.WithSendMD5(sum[:]), true},
		{"WithSendMD5 short", uploader.WithSendMD5(sum[:3]), false},
		{"WithChunkSize", uploader.WithChunkSize(512 << 10), true},
		{"WithChunkSize not a quantum", uploader.WithChunkSize(1000), false},
		{"WithRetry", uploader.WithRetry(uploader.Retry{AttemptTimeout: 5 * time.Second}), true},
		{"WithRetry negative", uploader.WithRetry(uploader.Retry{Deadline: -time.Second}), false},
		{"experimental.WithMD5", experimental.WithMD5(), true},
		{"experimental.WithoutCRC32C", experimental.WithoutCRC32C(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "writer/" + tc.name
			before := len(e.srv.Calls())
			w, err := e.c.NewWriter(context.Background(), bucket, name, tc.opt)
			if !tc.ok {
				if uploader.CodeOf(err) != codes.InvalidArgument {
					t.Fatalf("NewWriter = %v, want InvalidArgument", err)
				}
				if n := len(e.srv.Calls()); n != before {
					t.Fatalf("%d calls reached the service", n-before)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewWriter: %v", err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := e.content(name); !bytes.Equal(got, data) {
				t.Fatalf("stored %d bytes, want %d", len(got), len(data))
			}
		})
	}
}

// TestManyOptionsAlone passes each UploadMany option alone.
func TestManyOptionsAlone(t *testing.T) {
	e := newEnv(t)
	items := func(prefix string) []uploader.Item {
		return []uploader.Item{{Name: prefix + "/a", Data: []byte("a")}, {Name: prefix + "/b", Data: []byte("b")}}
	}
	tests := []struct {
		name string
		opt  uploader.ManyOption
		ok   bool
	}{
		{"WithConcurrency", uploader.WithConcurrency(2), true},
		{"WithConcurrency zero", uploader.WithConcurrency(0), false},
		{"StopOnError", uploader.StopOnError(), true},
		{"WithWorkerBuffers", uploader.WithWorkerBuffers(make([]byte, 4096)), true},
		{"WithWorkerBuffers none", uploader.WithWorkerBuffers(), false},
		{"WithWorkerBuffers empty", uploader.WithWorkerBuffers(nil), false},
		{"OnResult", uploader.OnResult(func(int, uploader.Result) {}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := e.c.UploadMany(context.Background(), bucket, items(tc.name), tc.opt)
			if !tc.ok {
				if uploader.CodeOf(err) != codes.InvalidArgument || rs != nil {
					t.Fatalf("UploadMany = %v, %v; want InvalidArgument and no results", rs, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("UploadMany: %v", err)
			}
			for _, it := range items(tc.name) {
				if got := e.content(it.Name); !bytes.Equal(got, it.Data) {
					t.Fatalf("%s: stored %q", it.Name, got)
				}
			}
		})
	}
	if _, err := e.c.UploadMany(context.Background(), bucket, items("nil"), nil); err != nil {
		t.Fatalf("UploadMany with a nil option: %v", err)
	}
}
