package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// jsonServer is a JSON API server objup's HTTP transport uploads to, with a
// way to read back what it stored.
type jsonServer struct {
	name    string
	url     string
	content func(t *testing.T, name string) ([]byte, bool)
}

// ourJSONServer is the project's fake, through its JSON front.
func ourJSONServer(e *env) jsonServer {
	return jsonServer{name: "fakes", url: e.srv.HTTPURL(), content: func(t *testing.T, name string) ([]byte, bool) {
		o, err := e.srv.Object(bucket, name)
		if err != nil {
			return nil, false
		}
		return o.Content, true
	}}
}

// httpClient is an objup client on the JSON API at base.
func httpClient(t *testing.T, base string, opts ...option.ClientOption) *uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(), append([]option.ClientOption{
		uploader.WithHTTP(), option.WithEndpoint(base + "/storage/v1/"), option.WithoutAuthentication(),
		uploader.WithRetry(fastRetry),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHTTPUploads: every size from 0 to 20 MiB, one-shot and resumable,
// byte-exact, on the project's fake (integration runs the same on
// fake-gcs-server and reads back with the official client).
func TestHTTPUploads(t *testing.T) {
	e := newEnv(t)
	for _, srv := range []jsonServer{ourJSONServer(e)} {
		c := httpClient(t, srv.url)
		for _, size := range []int{0, 1, kib, q - 1, q, q + 1, 4*mib + 3, 20 * mib} {
			name := "http/" + srv.name + "/" + sizeName(size)
			data := payload(size, uint64(size)+7)
			w, err := c.NewWriter(context.Background(), bucket, name, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/x-test", Metadata: map[string]string{"k": "v"}}))
			if err != nil {
				t.Fatal(err)
			}
			writeSplit(t, w, data, uint64(size))
			if err := w.Close(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, ok := srv.content(t, name)
			if !ok {
				t.Fatalf("%s: not stored", name)
			}
			sameBytes(t, name, got, data)
			if a := w.Attrs(); a.Size != int64(size) || a.ContentType != "application/x-test" || a.Metadata["k"] != "v" || (a.HasCRC32C && a.CRC32C != crc32.Checksum(data, castagnoli)) {
				t.Fatalf("%s: attrs %+v", name, a)
			}
		}
	}
}

// TestHTTPPreconditionsAndChecksums: a failed precondition is
// FailedPrecondition and a wrong checksum DataLoss, nothing stored, on both
// paths.
func TestHTTPPreconditionsAndChecksums(t *testing.T) {
	e := newEnv(t)
	c := httpClient(t, e.srv.HTTPURL())
	ctx := context.Background()
	for _, size := range []int{kib, 3*q + 5} {
		data := payload(size, 3)
		name := "http-pre/" + sizeName(size)
		if _, err := c.Upload(ctx, bucket, name, bytes.NewReader(data), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); err != nil {
			t.Fatal(err)
		}
		_, err := c.Upload(ctx, bucket, name, bytes.NewReader(payload(size, 4)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
		if uploader.CodeOf(err) != codes.FailedPrecondition {
			t.Fatalf("%s: second DoesNotExist = %v", name, err)
		}
		sameBytes(t, name, e.content(name), data)
		bad := "http-crc/" + sizeName(size)
		_, err = c.Upload(ctx, bucket, bad, bytes.NewReader(data), uploader.WithSendCRC32C(crc32.Checksum(data, castagnoli)^1))
		if uploader.CodeOf(err) != codes.DataLoss {
			t.Fatalf("%s: wrong CRC32C = %v (code %v)", bad, err, uploader.CodeOf(err))
		}
		e.absent(bad)
	}
}

// faultProxy stands between the HTTP transport and the fake: it can fail
// the nth PUT with a status, or cut it off after some bytes of its body, and
// it records the requests it saw. It rewrites session URIs to itself.
type faultProxy struct {
	url string
	mu  sync.Mutex
	log []string
	// failPut, when > 0, fails that PUT (counting from 1): with failCode,
	// or, if failCode is 0, by closing the connection after cutAfter bytes
	// of its body.
	failPut  int
	failCode int
	cutAfter int64
	puts     atomic.Int32
	// stall, when set, makes the proxy stop answering the first request
	// it matches: it holds the request open, sending nothing, until the
	// client gives up on it; stalled says it came.
	stall   func(r *http.Request) bool
	stalled atomic.Bool
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, _ := url.Parse(target)
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	var self string
	rp.ModifyResponse = func(r *http.Response) error {
		if loc := r.Header.Get("Location"); loc != "" {
			r.Header.Set("Location", strings.Replace(loc, target, self, 1))
		}
		return nil
	}
	stop := make(chan struct{})
	hs := startTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.log = append(p.log, r.Method+" "+r.Header.Get("Content-Range")+" "+r.Header.Get("X-Scope-Orgid"))
		p.mu.Unlock()
		if p.stall != nil && p.stall(r) && p.stalled.CompareAndSwap(false, true) {
			// The client's attempt ends by closing the connection,
			// which net/http notices only once the body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		if r.Method == http.MethodPut && int(p.puts.Add(1)) == p.failPut {
			_, _ = io.CopyN(io.Discard, r.Body, p.cutAfter)
			if p.failCode == 0 {
				hj, ok := w.(http.Hijacker)
				if ok {
					conn, _, _ := hj.Hijack()
					conn.Close()
					return
				}
			}
			// Read the rest before answering: a server that answers
			// before the body is in lingers half a second on the
			// connection (net/http's closeWriteAndWait).
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, "injected", p.failCode)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	self = hs.URL
	p.url = self
	// Cleanups run last first: a stalled handler is let go before the
	// server's Close waits for it.
	t.Cleanup(func() { close(stop) })
	return p
}

// startTestServer serves h on loopback until the test ends. Its Close, at
// the end of the test, waits for every connection's goroutine, including one
// that net/http keeps lingering half a second after a handler answered
// before it read the whole body (closeWriteAndWait), so the goroutine-leak
// check after the test never sees the server's own goroutines. (http.Server's
// Close does not wait for them.)
func startTestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

func (p *faultProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// TestHTTPResumeAfterFaults: a PUT that fails with 503, or whose connection
// is cut in the middle of its body, is resumed from the offset the session
// reports, byte-exact; every request carries the tenant.
func TestHTTPResumeAfterFaults(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name     string
		put      int
		code     int
		cutAfter int64
	}{
		{"503 on the first PUT", 1, http.StatusServiceUnavailable, 0},
		{"503 on the second PUT, mid-body", 2, http.StatusServiceUnavailable, mib + 7},
		{"connection cut mid-body", 2, 0, 3*mib + 1},
		{"429 on the last PUT", 5, http.StatusTooManyRequests, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProxy(t, e.srv.HTTPURL())
			p.failPut, p.failCode, p.cutAfter = tc.put, tc.code, tc.cutAfter
			// A fixed window of 4 MiB, so the PUTs fall where the cases say.
			c := httpClient(t, p.url, experimental.WithChunksInFlight(16))
			ctx, err := header.WithTenant(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			name := "http-fault/" + tc.name
			data := payload(20*mib+11, 5)
			if _, err := c.Upload(ctx, bucket, name, bytes.NewReader(data)); err != nil {
				t.Fatalf("Upload: %v (requests %v)", err, p.requests())
			}
			sameBytes(t, name, e.content(name), data)
			reqs := p.requests()
			query := false
			for _, r := range reqs {
				if !strings.HasSuffix(r, " acme") {
					t.Fatalf("request %q without the tenant", r)
				}
				query = query || strings.HasPrefix(r, "PUT bytes */")
			}
			if !query {
				t.Fatalf("no status query after the fault: %v", reqs)
			}
		})
	}
}

// TestHTTPCancelAbandonsTheSession: an upload whose context is cancelled
// stores nothing, and its session is cancelled with a DELETE.
func TestHTTPCancelAbandonsTheSession(t *testing.T) {
	e := newEnv(t)
	p := newFaultProxy(t, e.srv.HTTPURL())
	c := httpClient(t, p.url)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.NewWriter(ctx, bucket, "http-cancel")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload(9*mib, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	e.absent("http-cancel")
	// The cancel goes out in the background; Close waits for it.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	deleted := false
	for _, r := range p.requests() {
		deleted = deleted || strings.HasPrefix(r, "DELETE")
	}
	if !deleted {
		t.Fatalf("the session was not cancelled: %v", p.requests())
	}
}

// emulatorClient is a WithHTTP client pointed at e's fake through
// STORAGE_EMULATOR_HOST alone.
func emulatorClient(t *testing.T, e *env) *uploader.Client {
	t.Helper()
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(e.srv.HTTPURL(), "http://"))
	c, err := uploader.NewClient(context.Background(), uploader.WithHTTP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHTTPEmulatorEnv: STORAGE_EMULATOR_HOST points a WithHTTP client at an
// emulator, as it does the official client.
func TestHTTPEmulatorEnv(t *testing.T) {
	e := newEnv(t)
	c := emulatorClient(t, e)
	data := []byte("through the emulator variable")
	if _, err := c.Upload(context.Background(), bucket, "http-emu", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "http-emu", e.content("http-emu"), data)
	if uploader.CodeOf(fmt.Errorf("wrapped: %w", context.Canceled)) != codes.Canceled {
		t.Fatal("CodeOf does not see through a wrap")
	}
}

// TestHTTPEmulatorConnectionReuse: through STORAGE_EMULATOR_HOST (plain
// HTTP/1.1, one request per connection at a time), UploadMany at a
// concurrency above 100 keeps the connections it opened: a second batch at
// the same concurrency opens next to none, where a transport that keeps
// only 100 idle connections closes and redials the rest all along.
func TestHTTPEmulatorConnectionReuse(t *testing.T) {
	e := newEnv(t)
	c := emulatorClient(t, e)
	const conc, n = 200, 1000
	batch := func(k int) int64 {
		t.Helper()
		items := make([]uploader.Item, n)
		for i := range items {
			items[i] = uploader.Item{Name: fmt.Sprintf("reuse/%d/%04d", k, i), Data: bytes.Repeat([]byte{byte(i)}, 1<<10)}
		}
		before := e.srv.HTTPConns()
		res, err := c.UploadMany(context.Background(), bucket, items, uploader.WithConcurrency(conc))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("%s: %v", r.Name, r.Err)
			}
		}
		return e.srv.HTTPConns() - before
	}
	first := batch(1)
	second := batch(2)
	t.Logf("connections opened: %d by the first batch, %d by the second", first, second)
	if second > conc/10 {
		t.Fatalf("the second batch of %d objects at concurrency %d opened %d more connections (the first %d); want next to none", n, conc, second, first)
	}
}
