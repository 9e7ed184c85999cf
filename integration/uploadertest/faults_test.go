package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

func TestResumableFaults(t *testing.T) {
	tests := []struct {
		name    string
		inject  func(e *env)
		size    int
		resumes bool // a QueryWriteStatus must show in the log
	}{
		{"StartResumableWrite UNAVAILABLE", func(e *env) { e.srv.FailCall("StartResumableWrite", 1, codes.Unavailable) }, 3*q + 1, false},
		{"BidiWriteObject UNAVAILABLE at open", func(e *env) { e.srv.FailCall("BidiWriteObject", 1, codes.Unavailable) }, 3*q + 1, true},
		{"stream broken after 1 MiB", func(e *env) { e.srv.BreakStream("BidiWriteObject", 1*mib, codes.Unavailable) }, 20 * mib, true},
		{"stream broken after 7 MiB", func(e *env) { e.srv.BreakStream("BidiWriteObject", 7*mib, codes.Unavailable) }, 20 * mib, true},
		{"stream broken mid-chunk", func(e *env) { e.srv.BreakStream("BidiWriteObject", 3*q/2, codes.Internal) }, 4*q + 3, true},
		{"stream broken twice", func(e *env) {
			e.srv.BreakStream("BidiWriteObject", 2*mib, codes.Unavailable)
			e.srv.BreakStream("BidiWriteObject", 1*mib, codes.ResourceExhausted)
		}, 8 * mib, true},
		{"QueryWriteStatus UNAVAILABLE during resume", func(e *env) {
			e.srv.BreakStream("BidiWriteObject", 1*mib, codes.Unavailable)
			e.srv.FailCall("QueryWriteStatus", 1, codes.Unavailable)
		}, 4 * mib, true},
		{"broken at finish", func(e *env) { e.srv.BreakStream("BidiWriteObject", 3*q, codes.Internal) }, 3 * q, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, err := header.WithTenant(context.Background(), "tenant-7")
			if err != nil {
				t.Fatal(err)
			}
			data := payload(tc.size, 9)
			tc.inject(e)
			w, err := e.c.NewWriter(ctx, bucket, "faulty")
			if err != nil {
				t.Fatal(err)
			}
			writeSplit(t, w, data, 3)
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v (calls %v)", err, e.methods())
			}
			sameBytes(t, "stored content", e.content("faulty"), data)
			if n := e.count(); n != 1 {
				t.Fatalf("bucket holds %d objects, want 1", n)
			}
			if tc.resumes && e.countCalls("QueryWriteStatus") == 0 {
				t.Fatalf("no QueryWriteStatus in %v", e.methods())
			}
			// Every RPC of the upload, resumes included, carried the tenant.
			for _, c := range e.srv.Calls() {
				if c.Tenant != "tenant-7" {
					t.Fatalf("%s call carried tenant %q", c.Method, c.Tenant)
				}
			}
		})
	}
}

func TestOneShotRetryFollowsIdempotency(t *testing.T) {
	tests := []struct {
		name      string
		policy    uploader.RetryPolicy
		opts      []uploader.WriterOption
		wantRetry bool
	}{
		{"does-not-exist is retried", uploader.RetryIdempotent, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, true},
		{"generation match is retried", uploader.RetryIdempotent, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, true},
		{"unconditional is not retried", uploader.RetryIdempotent, nil, false},
		{"RetryAlways retries unconditional", uploader.RetryAlways, nil, true},
		{"RetryNever does not retry", uploader.RetryNever, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, retryWith(uploader.Retry{Policy: tc.policy}))
			e.srv.FailCall("WriteObject", 1, codes.Unavailable)
			data := payload(3*kib, 1)
			_, err := e.c.Upload(context.Background(), bucket, "once", bytes.NewReader(data), tc.opts...)
			if tc.wantRetry {
				if err != nil {
					t.Fatalf("Upload: %v", err)
				}
				sameBytes(t, "stored", e.content("once"), data)
				if n := e.countCalls("WriteObject"); n != 2 {
					t.Fatalf("%d WriteObject calls, want 2", n)
				}
				return
			}
			if err == nil || codesOf(err) != codes.Unavailable {
				t.Fatalf("Upload = %v, want UNAVAILABLE", err)
			}
			e.absent("once")
			if n := e.countCalls("WriteObject"); n != 1 {
				t.Fatalf("%d WriteObject calls, want 1", n)
			}
		})
	}
}

func codesOf(err error) codes.Code {
	var oe *uploader.Error
	if errors.As(err, &oe) {
		return oe.Code
	}
	return codes.Unknown
}

func TestNonRetryableErrorsSurfaceAtOnce(t *testing.T) {
	for _, code := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument, codes.NotFound} {
		t.Run(code.String(), func(t *testing.T) {
			e := newEnv(t)
			e.srv.FailCall("StartResumableWrite", 1, code)
			_, err := e.c.Upload(context.Background(), bucket, "x", bytes.NewReader(payload(2*q, 1)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
			if codesOf(err) != code {
				t.Fatalf("Upload = %v, want %v", err, code)
			}
			if n := e.countCalls("StartResumableWrite"); n != 1 {
				t.Fatalf("%d StartResumableWrite calls, want 1 (no retry)", n)
			}
			e.absent("x")
		})
	}
}

func TestChecksumMismatchStoresNothing(t *testing.T) {
	tests := []struct {
		name   string
		method string
		size   int
	}{
		{"one-shot", "WriteObject", 10 * kib},
		{"resumable", "BidiWriteObject", 3*q + 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.CorruptNext(tc.method)
			_, err := e.c.Upload(context.Background(), bucket, "corrupt", bytes.NewReader(payload(tc.size, 4)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
			if uploader.CodeOf(err) != codes.DataLoss {
				t.Fatalf("Upload = %v, want data loss", err)
			}
			e.absent("corrupt")
		})
	}
}

func TestChunkTimeoutResumes(t *testing.T) {
	e := newEnv(t, retryWith(uploader.Retry{AttemptTimeout: 200 * time.Millisecond}))
	// The first stream hangs on every message for longer than the chunk
	// timeout; the writer must give up on it and resume on a new stream.
	e.srv.Delay("BidiWriteObject", 2e9)
	data := payload(2*q+1, 2)
	w, err := e.c.NewWriter(context.Background(), bucket, "slow")
	if err != nil {
		t.Fatal(err)
	}
	writeSplit(t, w, data[:q+1], 1)
	e.srv.ClearFaults()
	writeSplit(t, w, data[q+1:], 2)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v (calls %v)", err, e.methods())
	}
	sameBytes(t, "stored", e.content("slow"), data)
}

// TestFailedCallsReleaseBuffers fails many uploads while their payload is on
// its way: every chunk must still go back to its pool, even when gRPC drops a
// message of a stream it already cleaned up without releasing it.
func TestFailedCallsReleaseBuffers(t *testing.T) {
	p, err := pool.New(pool.WithBudget(8 * q))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, uploader.WithPool(p))
	const n = 40
	for i := 1; i <= n; i++ {
		e.srv.FailCall("WriteObject", i, codes.PermissionDenied)
		e.srv.FailCall("BidiWriteObject", i, codes.PermissionDenied)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := 200 * kib
			if i%2 == 1 {
				size = 3 * q
			}
			_, err := e.c.Upload(context.Background(), bucket, fmt.Sprintf("denied/%d", i), bytes.NewReader(payload(size, uint64(i))))
			if uploader.CodeOf(err) != codes.PermissionDenied {
				t.Errorf("upload %d: %v, want permission denied", i, err)
			}
		}()
	}
	wg.Wait()
	if s := p.Stats(); s.InUseBytes != 0 {
		t.Fatalf("%d bytes of chunks never went back to the pool", s.InUseBytes)
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d objects stored", n)
	}
}
