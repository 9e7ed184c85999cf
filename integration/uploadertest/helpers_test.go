package uploadertest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"go.uber.org/goleak"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/link"
	"github.com/objup/objup/uploader"
)

const bucket = "bkt"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// env is one fake GCS and an objup client dialled to it.
type env struct {
	t   *testing.T
	srv *fakes.Server
	c   *uploader.Client
}

// maxChunk is the largest chunk size WithChunkSize takes: 64 MiB.
const maxChunk = 64 << 20

// isInvalid reports whether err is an InvalidArgument error.
func isInvalid(err error) bool { return uploader.CodeOf(err) == codes.InvalidArgument }

// fastRetry keeps fault tests quick.
var fastRetry = uploader.Retry{
	Backoff:  gax.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond},
	Deadline: 10 * time.Second,
}

// retryWith is fastRetry with r's non-zero fields.
func retryWith(r uploader.Retry) uploader.SharedOption {
	if r.Backoff == (gax.Backoff{}) {
		r.Backoff = fastRetry.Backoff
	}
	if r.Deadline == 0 {
		r.Deadline = fastRetry.Deadline
	}
	return uploader.WithRetry(r)
}

func dialOptions(srv *fakes.Server) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// testRTTEnv names the environment variable that puts a simulated path of
// that round-trip time (such as 20ms) between every test's client and fake
// (newEnv), so the tests run as if from afar.
const testRTTEnv = "OBJUP_TEST_RTT"

// testLink is the path of testRTTEnv, or loopback as it is.
func testLink(t *testing.T) link.Config {
	v := os.Getenv(testRTTEnv)
	if v == "" {
		return link.Config{}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", testRTTEnv, v, err)
	}
	return link.Config{RTT: d}
}

// newEnv starts a fake with bucket and a client; both are closed, and goroutine
// leaks checked, when the test ends.
func newEnv(t *testing.T, opts ...option.ClientOption) *env {
	t.Helper()
	return newEnvFake(t, nil, opts...)
}

// newEnvFake is newEnv with options for the fake.
func newEnvFake(t *testing.T, fopts []fakes.Option, opts ...option.ClientOption) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	srv, err := fakes.New(append([]fakes.Option{fakes.WithBucket(bucket), fakes.WithLink(testLink(t))}, fopts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(), append(append(dialOptions(srv), uploader.WithRetry(fastRetry)), opts...)...)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		goleak.VerifyNone(t, ignore)
	})
	return &env{t: t, srv: srv, c: c}
}

// content returns the stored bytes of an object, failing the test if it is
// missing.
func (e *env) content(name string) []byte {
	e.t.Helper()
	o, err := e.srv.Object(bucket, name)
	if err != nil {
		e.t.Fatalf("stored object %q: %v", name, err)
	}
	return o.Content
}

// absent fails the test if the object exists.
func (e *env) absent(name string) {
	e.t.Helper()
	if o, err := e.srv.Object(bucket, name); err == nil {
		e.t.Fatalf("object %q was stored (%d bytes) but must not exist", name, len(o.Content))
	}
}

// count returns how many objects the bucket holds.
func (e *env) count() int {
	e.t.Helper()
	objs, err := e.srv.ListObjects(bucket, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return len(objs)
}

// methods returns the methods the fake served, in order.
func (e *env) methods() []string {
	var m []string
	for _, c := range e.srv.Calls() {
		m = append(m, c.Method)
	}
	return m
}

func (e *env) countCalls(method string) int {
	n := 0
	for _, c := range e.srv.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// payload returns n deterministic pseudo-random bytes.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (sha256 %x), want %d bytes (sha256 %x)", what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB+%d", n>>20, n&(1<<20-1))
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB+%d", n>>10, n&(1<<10-1))
	}
	return fmt.Sprintf("%dB", n)
}

// exists reports whether the object is stored.
func (e *env) exists(name string) bool {
	_, err := e.srv.Object(bucket, name)
	return err == nil
}
