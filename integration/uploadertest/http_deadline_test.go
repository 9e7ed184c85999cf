package uploadertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// hangLimit is how long a test waits for a call that must return on its
// own (by its context's deadline or the service's answer) before it
// reports a hang. It bounds the test, not the call: the calls return far
// sooner.
const hangLimit = time.Minute

// returns runs f and fails the test if f has not returned within
// hangLimit.
func returns[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangLimit):
		t.Fatalf("%s has not returned after %v", what, hangLimit)
		panic("unreachable")
	}
}

// armRetryTest creates a retry test on the fake's retry-test API with
// instructions for method over the given transport, and returns its id.
func armRetryTest(t *testing.T, e *env, transport, method string, instructions ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"instructions": map[string][]string{method: instructions},
		"transport":    transport,
	})
	resp, err := http.Post(e.srv.HTTPURL()+"/retry_test", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rt struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil || resp.StatusCode != http.StatusOK || rt.ID == "" {
		t.Fatalf("POST /retry_test: %s, %v", resp.Status, err)
	}
	return rt.ID
}

// TestHTTPResumableFailsWithoutHanging: a JSON resumable upload whose PUT in
// flight fails for good (a 400 or 412 after the first MiB of a window, as
// the retry test API injects it) ends with the service's error, through
// Upload and UploadMany, stores nothing, and gives every buffer back to the
// pool.
func TestHTTPResumableFailsWithoutHanging(t *testing.T) {
	for _, tc := range []struct {
		name  string
		instr string
		code  codes.Code
		many  bool
	}{
		{"400 after 1 MiB, Upload", "return-400-after-1024K", codes.InvalidArgument, false},
		{"412 after 1 MiB, UploadMany", "return-412-after-1024K", codes.FailedPrecondition, true},
		{"503 after 1 MiB is resumed, Upload", "return-503-after-1024K", codes.OK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pool.New(pool.WithBudget(64 * q))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			c := httpClient(t, e.srv.HTTPURL(), uploader.WithPool(p))
			id := armRetryTest(t, e, "HTTP", "storage.objects.insert", tc.instr)
			ctx, cancel := context.WithTimeout(header.Append(context.Background(), "x-retry-test-id", id), 10*time.Second)
			defer cancel()
			name := "hang/" + tc.instr
			data := payload(5*mib, 3)
			err = returns(t, "the upload", func() error {
				if tc.many {
					_, err := c.UploadMany(ctx, bucket, []uploader.Item{{Name: name, Data: data}})
					return err
				}
				_, err := c.Upload(ctx, bucket, name, bytes.NewReader(data))
				return err
			})
			if got := uploader.CodeOf(err); got != tc.code {
				t.Fatalf("upload: %v (code %v), want code %v", err, got, tc.code)
			}
			if tc.code == codes.OK {
				sameBytes(t, name, e.content(name), data)
			} else {
				e.absent(name)
			}
			if n := p.Stats().InUseBytes; n != 0 {
				t.Fatalf("%d bytes of buffers still in use after the upload returned", n)
			}
		})
	}
}

// TestHTTPUploadReturnsByItsDeadline: whichever step of a resumable JSON
// upload the service stops answering at (the start, a PUT in the middle,
// the last PUT, the status query after a failed PUT), the upload returns
// with DEADLINE_EXCEEDED once its context's deadline passes, well before the
// attempt timeout, stores nothing, and gives every buffer back.
func TestHTTPUploadReturnsByItsDeadline(t *testing.T) {
	isStart := func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Query().Get("uploadType") == "resumable"
	}
	isQuery := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasPrefix(r.Header.Get("Content-Range"), "bytes */")
	}
	isData := func(r *http.Request) bool { return r.Method == http.MethodPut && !isQuery(r) }
	isLast := func(r *http.Request) bool {
		return isData(r) && !strings.HasSuffix(r.Header.Get("Content-Range"), "/*")
	}
	for _, tc := range []struct {
		name         string
		stall        func(r *http.Request) bool
		failFirstPut bool
	}{
		{"start", isStart, false},
		{"middle PUT", func(r *http.Request) bool { return isData(r) && !isLast(r) }, false},
		{"last PUT", isLast, false},
		{"status query", isQuery, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pool.New(pool.WithBudget(64 * q))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			proxy := newFaultProxy(t, e.srv.HTTPURL())
			proxy.stall = tc.stall
			if tc.failFirstPut {
				proxy.failPut, proxy.failCode = 1, http.StatusServiceUnavailable
			}
			// The attempt timeout is far beyond the context's deadline:
			// only the context can end the stalled request.
			// A fixed window of 4 MiB puts the PUTs where the steps say.
			c := httpClient(t, proxy.url, uploader.WithPool(p), experimental.WithChunksInFlight(16),
				retryWith(uploader.Retry{AttemptTimeout: time.Hour, Deadline: time.Hour}))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			name := "deadline/" + tc.name
			err = returns(t, "the upload", func() error {
				_, err := c.Upload(ctx, bucket, name, bytes.NewReader(payload(5*mib+3, 4)))
				return err
			})
			if !proxy.stalled.Load() {
				t.Fatalf("the step never came: %v (requests %v)", err, proxy.requests())
			}
			if uploader.CodeOf(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("upload: %v, want DEADLINE_EXCEEDED from the context (requests %v)", err, proxy.requests())
			}
			e.absent(name)
			if n := p.Stats().InUseBytes; n != 0 {
				t.Fatalf("%d bytes of buffers still in use after the upload returned", n)
			}
		})
	}
}
