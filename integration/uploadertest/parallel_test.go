package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// parallelClients returns a client of each transport on e's fake, with
// buffers from p.
func parallelClients(t *testing.T, e *env, p pool.Allocator) map[string]*uploader.Client {
	t.Helper()
	g, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), uploader.WithRetry(fastRetry), uploader.WithPool(p))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return map[string]*uploader.Client{"gRPC": g, "JSON": httpClient(t, e.srv.HTTPURL(), uploader.WithPool(p))}
}

// noTemporaries fails the test if a temporary object of a parallel upload
// is left in the bucket.
func (e *env) noTemporaries() {
	e.t.Helper()
	objs, err := e.srv.ListObjects(bucket, "objup-tmp/")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range objs {
		e.t.Errorf("temporary object %q (%d bytes) left behind", o.Name, o.Size)
	}
}

// TestParallelUpload: objects of every shape of a parallel upload (empty,
// one chunk, exactly one part, one part and a byte, several parts, over 32
// parts so the parts are composed in rounds) are stored byte-exact under
// their name, with the CRC32C of what was written, over both transports,
// with no temporary object left and every buffer back in the pool.
func TestParallelUpload(t *testing.T) {
	const part = 2 * q
	for _, tc := range []struct {
		size, parts, calls int // calls: the writes under the temporary prefix
	}{
		{0, 0, 0},
		{1000, 0, 0},
		{part, 0, 0},
		{part + 1, 2, 2},
		{5*part + 7, 6, 6},
		{40*part - 3, 40, 40}, // 2 intermediate composes, then the final one
	} {
		for _, tr := range []string{"gRPC", "JSON"} {
			t.Run(tr+"/"+sizeName(tc.size), func(t *testing.T) {
				p, err := pool.New(pool.WithBudget(16 * q))
				if err != nil {
					t.Fatal(err)
				}
				e := newEnv(t)
				c := parallelClients(t, e, p)[tr]
				data := payload(tc.size, 11)
				var progress []int64
				w, err := c.NewWriter(context.Background(), bucket, "big", uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: part, Parts: 3}),
					uploader.WithAttrs(uploader.ObjectAttrs{Metadata: map[string]string{"k": "v"}}), uploader.WithProgress(func(n int64) { progress = append(progress, n) }))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(data); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				sameBytes(t, "stored object", e.content("big"), data)
				want := crc32.Checksum(data, castagnoli)
				o, err := e.srv.Object(bucket, "big")
				if err != nil {
					t.Fatal(err)
				}
				if a := w.Attrs(); o.CRC32C != want || a.CRC32C != want || a.Size != int64(tc.size) {
					t.Fatalf("CRC32C stored %08x, Attrs %08x (size %d); want %08x (size %d)", o.CRC32C, a.CRC32C, a.Size, want, tc.size)
				}
				if o.Metadata["k"] != "v" {
					t.Errorf("metadata %v, want k=v", o.Metadata)
				}
				if len(progress) == 0 || progress[len(progress)-1] != int64(tc.size) {
					t.Errorf("progress %v, want it to end at %d", progress, tc.size)
				}
				e.noTemporaries()
				if n := e.count(); n != 1 {
					t.Errorf("%d objects in the bucket, want 1", n)
				}
				if n := p.Stats().InUseBytes; n != 0 {
					t.Errorf("%d bytes of buffers in use after Close", n)
				}
			})
		}
	}
}

// TestParallelUploadFaults: a part whose write fails once is retried; a
// part that fails for good, or a compose that fails for good, fails the
// upload with that cause; a final compose whose precondition fails fails
// with it. Whatever happens, nothing is stored under the object's name
// (but what was there before), no temporary object is left, not even one
// whose write was out when another part failed and that the service stored
// late, and every buffer is back.
func TestParallelUploadFaults(t *testing.T) {
	const part = 2 * q
	for _, tc := range []struct {
		name, method, instr string
		exists              bool // the object exists before
		ifNew               bool // DoesNotExist, which makes the compose safe to retry
		code                codes.Code
		commit              time.Duration // the fake's commit delay (fakes.WithCommitDelay)
	}{
		{"part 503 once", "storage.objects.insert", "return-503", false, false, codes.OK, 0},
		{"part 400", "storage.objects.insert", "return-400", false, false, codes.InvalidArgument, 0},
		// The part in flight beside the failed one is stored late.
		{"part 400, slow commit", "storage.objects.insert", "return-400", false, false, codes.InvalidArgument, 300 * time.Millisecond},
		{"part broken mid-stream", "storage.objects.insert", "return-reset-connection", false, false, codes.OK, 0},
		// Without a precondition a compose is not idempotent, and is not
		// retried, as a one-shot write is not.
		{"compose 503 once", "storage.objects.compose", "return-503", false, false, codes.Unavailable, 0},
		{"compose 503 once, if new", "storage.objects.compose", "return-503", false, true, codes.OK, 0},
		{"compose 400", "storage.objects.compose", "return-400", false, false, codes.InvalidArgument, 0},
		{"object exists", "", "", true, true, codes.FailedPrecondition, 0},
	} {
		for _, tr := range []string{"gRPC", "JSON"} {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				p, err := pool.New(pool.WithBudget(16 * q))
				if err != nil {
					t.Fatal(err)
				}
				e := newEnvFake(t, []fakes.Option{fakes.WithCommitDelay(tc.commit)})
				c := parallelClients(t, e, p)[tr]
				ctx := context.Background()
				var before []byte
				if tc.exists {
					before = payload(100, 1)
					if _, err := c.Upload(ctx, bucket, "big", bytes.NewReader(before)); err != nil {
						t.Fatal(err)
					}
				}
				if tc.method != "" {
					id := armRetryTest(t, e, map[string]string{"gRPC": "GRPC", "JSON": "HTTP"}[tr], tc.method, tc.instr)
					ctx = header.Append(ctx, "x-retry-test-id", id)
				}
				opts := []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: part, Parts: 2})}
				if tc.ifNew {
					opts = append(opts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
				}
				data := payload(7*part+5, 12)
				_, err = c.Upload(ctx, bucket, "big", bytes.NewReader(data), opts...)
				if got := uploader.CodeOf(err); got != tc.code {
					t.Fatalf("upload: %v (code %v), want code %v", err, got, tc.code)
				}
				var ue *uploader.Error
				if err != nil && (!errors.As(err, &ue) || ue.Object != "big") {
					t.Errorf("error %v is not the upload's *Error on object big", err)
				}
				switch {
				case tc.code == codes.OK:
					sameBytes(t, "stored object", e.content("big"), data)
				case tc.exists:
					sameBytes(t, "object before", e.content("big"), before)
				default:
					e.absent("big")
				}
				if tc.commit > 0 {
					// Close lets every write the fake still serves end,
					// and store what it would.
					if err := e.srv.Close(); err != nil {
						t.Fatal(err)
					}
				}
				e.noTemporaries()
				if n := p.Stats().InUseBytes; n != 0 {
					t.Errorf("%d bytes of buffers in use after the upload", n)
				}
			})
		}
	}
}

// TestParallelUploadCancelled: an upload whose context ends while parts
// are uploading fails with Canceled; nothing is stored, the parts already
// written are deleted, even those the service stores late (a slow commit),
// and every buffer is back.
func TestParallelUploadCancelled(t *testing.T) {
	const part = 2 * q
	for _, tc := range []struct {
		tr     string
		commit time.Duration
	}{{"gRPC", 0}, {"JSON", 0}, {"gRPC", 200 * time.Millisecond}, {"JSON", 200 * time.Millisecond}} {
		tr := tc.tr
		t.Run(fmt.Sprintf("%s/commit=%v", tr, tc.commit), func(t *testing.T) {
			p, err := pool.New(pool.WithBudget(16 * q))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnvFake(t, []fakes.Option{fakes.WithCommitDelay(tc.commit)})
			c := parallelClients(t, e, p)[tr]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			w, err := c.NewWriter(ctx, bucket, "big", uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: part, Parts: 2}),
				uploader.WithProgress(func(int64) { once.Do(cancel) })) // cancelled once a part is stored
			if err != nil {
				t.Fatal(err)
			}
			data := payload(30*part, 13)
			_, werr := io.Copy(w, bytes.NewReader(data))
			cerr := w.Close()
			if werr == nil && cerr == nil {
				t.Fatal("the cancelled upload succeeded")
			}
			for _, err := range []error{werr, cerr} {
				if err != nil && uploader.CodeOf(err) != codes.Canceled {
					t.Fatalf("error %v (code %v), want Canceled", err, uploader.CodeOf(err))
				}
			}
			e.absent("big")
			// The deletes of the temporary objects go on in the
			// background once the context ended; Close waits for them.
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.commit > 0 {
				if err := e.srv.Close(); err != nil {
					t.Fatal(err)
				}
			}
			e.noTemporaries()
			if n := p.Stats().InUseBytes; n != 0 {
				t.Errorf("%d bytes of buffers in use after the upload", n)
			}
		})
	}
}

// TestParallelUploadSmallBudget: a pool budget smaller than a part does
// not stall the upload: parts go out smaller.
func TestParallelUploadSmallBudget(t *testing.T) {
	p, err := pool.New(pool.WithBudget(4 * q))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	c := parallelClients(t, e, p)["gRPC"]
	data := payload(20*q+3, 14)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Upload(ctx, bucket, "big", bytes.NewReader(data), uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 16 * q})); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "stored object", e.content("big"), data)
	e.noTemporaries()
	if s := p.Stats(); s.BudgetWaits == 0 || s.InUseBytes != 0 {
		t.Errorf("pool: %d waits for the budget (want some: it is smaller than a part), %d bytes in use after the upload", s.BudgetWaits, s.InUseBytes)
	}
}

// TestParallelUploadInvalid: options a parallel upload cannot honour are
// refused by NewWriter, before anything is sent.
func TestParallelUploadInvalid(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		opts []uploader.WriterOption
	}{
		{"negative part size", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: -1})}},
		{"negative parts", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{Parts: -1})}},
		{"bad prefix", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{TempPrefix: "tmp/\n"})}},
		{"with WithBuffer", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{}), uploader.WithBuffer(make([]byte, q))}},
		{"with WithMD5", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{}), experimental.WithMD5()}},
		{"with WithSendMD5", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{}), uploader.WithSendMD5(make([]byte, 16))}},
		{"without CRC32C", []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{}), experimental.WithoutCRC32C()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.c.NewWriter(context.Background(), bucket, "big", tc.opts...)
			if uploader.CodeOf(err) != codes.InvalidArgument {
				t.Fatalf("NewWriter: %v, want an InvalidArgument error", err)
			}
		})
	}
	if n := len(e.srv.Calls()); n != 0 {
		t.Fatalf("%d calls reached the fake", n)
	}
}
