package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	q   = pool.Quantum
)

var sizes = []int{0, 1, q - 1, q, q + 1, 2*mib + 3, 20 * mib}

// writeSplit writes data to w in random pieces.
func writeSplit(t *testing.T, w io.Writer, data []byte, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	for len(data) > 0 {
		n := 1 + r.IntN(min(len(data), 3*q/2))
		if r.IntN(4) == 0 {
			n = min(len(data), 1+r.IntN(64))
		}
		m, err := w.Write(data[:n])
		if err != nil || m != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		data = data[n:]
	}
}

func TestUploadSizes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	modes := []struct {
		name  string
		write func(t *testing.T, w *uploader.Writer, data []byte)
	}{
		{"Write", func(t *testing.T, w *uploader.Writer, data []byte) { writeSplit(t, w, data, uint64(len(data))) }},
		{"ReadFrom", func(t *testing.T, w *uploader.Writer, data []byte) {
			n, err := io.Copy(w, iotest.HalfReader(bytes.NewReader(data)))
			if err != nil || n != int64(len(data)) {
				t.Fatalf("io.Copy = %d, %v", n, err)
			}
		}},
	}
	for _, size := range sizes {
		for _, mode := range modes {
			t.Run(sizeName(size)+"/"+mode.name, func(t *testing.T) {
				name := "sizes/" + mode.name + "/" + sizeName(size)
				data := payload(size, 1)
				e.srv.ResetCalls()
				w, err := e.c.NewWriter(ctx, bucket, name)
				if err != nil {
					t.Fatal(err)
				}
				mode.write(t, w, data)
				if err := w.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				sameBytes(t, "stored content", e.content(name), data)
				a := w.Attrs()
				if a == nil || a.Size != int64(size) || a.Name != name || a.Bucket != bucket {
					t.Fatalf("Attrs = %+v", a)
				}
				if want := crc32.Checksum(data, castagnoli); !a.HasCRC32C || a.CRC32C != want {
					t.Fatalf("Attrs CRC32C = %08x (%v), want %08x", a.CRC32C, a.HasCRC32C, want)
				}
				if a.Generation == 0 {
					t.Fatal("Attrs.Generation = 0")
				}
				calls := e.methods()
				if size <= q {
					// The small-object path: exactly one WriteObject call.
					if len(calls) != 1 || calls[0] != "WriteObject" {
						t.Fatalf("calls = %v, want exactly [WriteObject]", calls)
					}
				} else if e.countCalls("StartResumableWrite") != 1 || e.countCalls("BidiWriteObject") != 1 || e.countCalls("WriteObject") != 0 {
					t.Fatalf("calls = %v, want one StartResumableWrite and one BidiWriteObject", calls)
				}
			})
		}
	}
}

func TestUploadOptionsReachObject(t *testing.T) {
	e := newEnv(t)
	for _, size := range []int{10, 3 * q} {
		name := "opts/" + sizeName(size)
		var progress []int64
		a, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(payload(size, 3)),
			uploader.WithAttrs(uploader.ObjectAttrs{
				ContentType:        "application/x-test",
				Metadata:           map[string]string{"tenant": "t1"},
				CacheControl:       "no-cache",
				ContentEncoding:    "identity",
				ContentDisposition: "attachment",
			}),
			experimental.WithMD5(),
			uploader.WithProgress(func(n int64) { progress = append(progress, n) }),
		)
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.srv.Object(bucket, name)
		if err != nil {
			t.Fatal(err)
		}
		if o.ContentType != "application/x-test" || o.Metadata["tenant"] != "t1" || o.CacheControl != "no-cache" || o.ContentEncoding != "identity" || o.ContentDisposition != "attachment" {
			t.Fatalf("stored attrs = %+v", o.ObjectAttrs)
		}
		if a.ContentType != "application/x-test" || a.Metadata["tenant"] != "t1" || len(a.MD5) != 16 {
			t.Fatalf("returned attrs = %+v", a)
		}
		if len(progress) == 0 || progress[len(progress)-1] != int64(size) {
			t.Fatalf("progress = %v, want it to end at %d", progress, size)
		}
	}
}

func TestContentTypeSniffed(t *testing.T) {
	e := newEnv(t)
	a, err := e.c.Upload(context.Background(), bucket, "page", bytes.NewReader([]byte("<html><body>hi</body></html>")))
	if err != nil {
		t.Fatal(err)
	}
	if a.ContentType != "text/html; charset=utf-8" {
		t.Fatalf("ContentType = %q", a.ContentType)
	}
}

func TestPreconditionFailure(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, size := range []int{5, 2*q + 5} {
		name := "pre/" + sizeName(size)
		first := payload(size, 1)
		if _, err := e.c.Upload(ctx, bucket, name, bytes.NewReader(first), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); err != nil {
			t.Fatal(err)
		}
		_, err := e.c.Upload(ctx, bucket, name, bytes.NewReader(payload(size, 2)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
		if uploader.CodeOf(err) != codes.FailedPrecondition {
			t.Fatalf("second upload with DoesNotExist: %v, want a precondition failure", err)
		}
		if s, ok := status.FromError(err); !ok || s.Code() != codes.FailedPrecondition {
			t.Fatalf("status.FromError = %v, %v", s, ok)
		}
		var oe *uploader.Error
		if !errors.As(err, &oe) || oe.Object != name || oe.Bucket != bucket {
			t.Fatalf("errors.As *Error: %#v", oe)
		}
		sameBytes(t, "original content", e.content(name), first)
	}
}

func TestBucketNotFound(t *testing.T) {
	e := newEnv(t)
	for _, size := range []int{5, 2 * q} {
		_, err := e.c.Upload(context.Background(), "no-such-bucket", "o", bytes.NewReader(payload(size, 1)))
		if uploader.CodeOf(err) != codes.NotFound {
			t.Fatalf("size %d: %v, want not found", size, err)
		}
	}
}

func TestInvalidInputRejectedBeforeAnyRPC(t *testing.T) {
	e := newEnv(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ok := context.Background()
	tests := []struct {
		name   string
		ctx    context.Context
		bucket string
		object string
		opts   []uploader.WriterOption
		check  func(error) bool
	}{
		{"empty bucket", ok, "", "o", nil, isInvalid},
		{"upper-case bucket", ok, "Bucket", "o", nil, isInvalid},
		{"bucket with space", ok, "my bucket", "o", nil, isInvalid},
		{"bucket starting with dash", ok, "-bkt", "o", nil, isInvalid},
		{"bucket is an IP", ok, "192.168.5.4", "o", nil, isInvalid},
		{"empty object", ok, bucket, "", nil, isInvalid},
		{"object with newline", ok, bucket, "a\nb", nil, isInvalid},
		{"object dot", ok, bucket, ".", nil, isInvalid},
		{"object too long", ok, bucket, string(bytes.Repeat([]byte("a"), 1025)), nil, isInvalid},
		{"object not UTF-8", ok, bucket, "\xff\xfe", nil, isInvalid},
		{"acme challenge", ok, bucket, ".well-known/acme-challenge/x", nil, isInvalid},
		{"nil buffer", ok, bucket, "o", []uploader.WriterOption{uploader.WithBuffer(nil)}, isInvalid},
		{"negative generation", ok, bucket, "o", []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{GenerationMatch: -1})}, isInvalid},
		{"negative metageneration", ok, bucket, "o", []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{MetagenerationMatch: -1})}, isInvalid},
		{"empty metadata key", ok, bucket, "o", []uploader.WriterOption{uploader.WithAttrs(uploader.ObjectAttrs{Metadata: map[string]string{"": "v"}})}, isInvalid},
		{"cancelled context", cancelled, bucket, "o", nil, func(err error) bool { return errors.Is(err, context.Canceled) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.srv.ResetCalls()
			w, err := e.c.NewWriter(tc.ctx, tc.bucket, tc.object, tc.opts...)
			if err == nil {
				w.CloseWithError(nil)
				t.Fatal("NewWriter succeeded")
			}
			if !tc.check(err) {
				t.Fatalf("error %v has the wrong class", err)
			}
			if _, uerr := e.c.Upload(tc.ctx, tc.bucket, tc.object, bytes.NewReader([]byte("x")), tc.opts...); uerr == nil {
				t.Fatal("Upload succeeded")
			}
			if calls := e.srv.Calls(); len(calls) != 0 {
				t.Fatalf("RPCs were sent: %v", calls)
			}
		})
	}
}

func TestInvalidClientOptions(t *testing.T) {
	e := newEnv(t)
	small, err := pool.NewFixed(make([]byte, 1000))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts []option.ClientOption
		says string // in the error's message
	}{
		{"chunk size not a quantum multiple", []option.ClientOption{uploader.WithChunkSize(100 * kib)}, "chunk size 102400"},
		{"negative chunk size", []option.ClientOption{uploader.WithChunkSize(-q)}, "chunk size -262144"},
		{"zero chunks in flight", []option.ClientOption{experimental.WithChunksInFlight(0)}, "chunks in flight 0 must be at least 1"},
		{"negative chunks in flight", []option.ClientOption{experimental.WithChunksInFlight(-3)}, "chunks in flight -3 must be at least 1"},
		{"zero connect timeout", []option.ClientOption{experimental.WithConnectTimeout(0)}, "connect timeout 0s must be positive"},
		{"pool and chunk size", []option.ClientOption{uploader.WithPool(pool.Default()), uploader.WithChunkSize(2 * q)}, "exclude each other"},
		{"pool with sub-quantum buffers", []option.ClientOption{uploader.WithPool(small)}, "pool buffer size 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.srv.ResetCalls()
			c, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), tc.opts...)...)
			if err == nil {
				c.Close()
				t.Fatal("NewClient succeeded")
			}
			if uploader.CodeOf(err) != codes.InvalidArgument {
				t.Fatalf("error %v is not InvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
			if calls := e.srv.Calls(); len(calls) != 0 {
				t.Fatalf("RPCs were sent: %v", calls)
			}
		})
	}
}

func TestCloseWithErrorStoresNothing(t *testing.T) {
	e := newEnv(t)
	for _, size := range []int{100, 3 * q} {
		name := "abandoned/" + sizeName(size)
		w, err := e.c.NewWriter(context.Background(), bucket, name)
		if err != nil {
			t.Fatal(err)
		}
		writeSplit(t, w, payload(size, 1), 1)
		if err := w.CloseWithError(errors.New("changed my mind")); err != nil {
			t.Fatalf("CloseWithError: %v", err)
		}
		if err := w.Close(); err == nil {
			t.Fatal("Close after CloseWithError succeeded")
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("Write after CloseWithError succeeded")
		}
		e.absent(name)
	}
}

func TestCancelMidUploadStoresNothing(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.NewWriter(ctx, bucket, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	data := payload(20*mib, 5)
	if _, err := w.Write(data[:5*mib]); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, werr := w.Write(data[5*mib:])
	cerr := w.Close()
	if werr == nil && cerr == nil {
		t.Fatal("upload succeeded after its context was cancelled")
	}
	if !errors.Is(cerr, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", cerr)
	}
	e.absent("cancelled")
}

func TestConcurrentUploadsSmallPool(t *testing.T) {
	// Many uploads share a pool with a tight budget; every byte must arrive
	// intact, so a chunk reused before gRPC and the service let go of it
	// would show up as corrupted content.
	p, err := pool.New(pool.WithBudget(6 * q))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, uploader.WithPool(p), experimental.WithChunksInFlight(2))
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	datas := make([][]byte, n)
	for i := range n {
		datas[i] = payload([]int{2 * kib, 100 * kib, q, 3*q + 17, 1*mib + 5}[i%5], uint64(i))
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.c.Upload(context.Background(), bucket, "conc/"+string(rune('a'+i)), bytes.NewReader(datas[i]))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		sameBytes(t, "object", e.content("conc/"+string(rune('a'+i))), datas[i])
	}
	if s := p.Stats(); s.InUseBytes != 0 {
		t.Fatalf("pool has %d bytes in use after all uploads", s.InUseBytes)
	}
}

// TestLargeChunks uploads with chunks above the 2 MiB message limit: each chunk
// goes out in several messages, and a resumed one from the middle.
func TestLargeChunks(t *testing.T) {
	e := newEnv(t, uploader.WithChunkSize(5*q*4)) // 5 MiB
	for _, brk := range []int64{0, 3*mib + 5} {
		name := fmt.Sprintf("large-chunks/%d", brk)
		if brk > 0 {
			e.srv.BreakStream("BidiWriteObject", brk, codes.Unavailable)
		}
		data := payload(12*mib+7, 3)
		if _, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(data)); err != nil {
			t.Fatalf("break at %d: %v", brk, err)
		}
		sameBytes(t, name, e.content(name), data)
	}
}
