package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// TestUploadManyNilReaderFromOpen: Open returning (nil, nil) fails that item
// and stores nothing; the process does not crash and the other items upload.
func TestUploadManyNilReaderFromOpen(t *testing.T) {
	e := newEnv(t)
	items := []uploader.Item{
		{Name: "nil-open", Open: func() (io.ReadCloser, error) { return nil, nil }},
		{Name: "fine", Data: payload(kib, 1)},
	}
	res, err := e.c.UploadMany(context.Background(), bucket, items)
	if err == nil || res[0].Err == nil || uploader.CodeOf(res[0].Err) != codes.InvalidArgument {
		t.Fatalf("UploadMany = %v, item 0: %v; want an InvalidArgument error for the nil reader", err, res[0].Err)
	}
	if res[1].Err != nil {
		t.Fatalf("item 1: %v", res[1].Err)
	}
	e.absent("nil-open")
	sameBytes(t, "fine", e.content("fine"), items[1].Data)
}

// TestNilReaderIsAnError: Upload and ReadFrom take a nil reader as an error;
// an empty object is written from an empty reader.
func TestNilReaderIsAnError(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.Upload(context.Background(), bucket, "nil", nil); uploader.CodeOf(err) != codes.InvalidArgument {
		t.Fatalf("Upload(nil) = %v, want InvalidArgument", err)
	}
	w, err := e.c.NewWriter(context.Background(), bucket, "nil2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFrom(nil); uploader.CodeOf(err) != codes.InvalidArgument {
		t.Fatalf("ReadFrom(nil) = %v, want InvalidArgument", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed ReadFrom succeeded")
	}
	if m := e.methods(); len(m) != 0 {
		t.Fatalf("calls made: %v", m)
	}
	if _, err := e.c.Upload(context.Background(), bucket, "empty", bytes.NewReader(nil)); err != nil {
		t.Fatalf("empty reader: %v", err)
	}
	if got := e.content("empty"); len(got) != 0 {
		t.Fatalf("empty object has %d bytes", len(got))
	}
}

// TestChunkSizeBounded: chunk sizes above 64 MiB, or not a multiple of
// the quantum, are rejected before any memory is taken.
func TestChunkSizeBounded(t *testing.T) {
	e := newEnv(t)
	srv := e.srv
	for _, n := range []int{0, -q, q + 1, maxChunk + q, 1 << 30, 1 << 40} {
		if _, err := uploader.NewClient(context.Background(), append(dialOptions(srv), uploader.WithChunkSize(n))...); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Errorf("NewClient(WithChunkSize(%d)) = %v, want InvalidArgument", n, err)
		}
	}
	for _, n := range []int{-1, maxChunk + q, 1 << 40} {
		if _, err := e.c.NewWriter(context.Background(), bucket, "o", uploader.WithChunkSize(n)); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Errorf("NewWriter(WithChunkSize(%d)) = %v, want InvalidArgument", n, err)
		}
	}
	c, err := uploader.NewClient(context.Background(), append(dialOptions(srv), uploader.WithChunkSize(maxChunk))...)
	if err != nil {
		t.Fatalf("WithChunkSize(64 MiB): %v", err)
	}
	c.Close()
}

// TestConcurrentWriteIsAnError: two goroutines writing to one Writer get an
// TestConcurrentUsePanics: a Writer's method called while another runs is
// a bug in the caller and panics, naming the method; the method that was
// running goes on, and the upload completes.
func TestConcurrentUsePanics(t *testing.T) {
	e := newEnv(t)
	w, err := e.c.NewWriter(context.Background(), bucket, "racy")
	if err != nil {
		t.Fatal(err)
	}
	// ReadFrom runs until the reader returns, which it does once the
	// second call has been made.
	r, pw := io.Pipe()
	data := payload(100*kib, 3)
	done := make(chan error, 1)
	go func() {
		_, err := w.ReadFrom(r)
		done <- err
	}()
	if _, err := pw.Write(data[:kib]); err != nil { // ReadFrom is running
		t.Fatal(err)
	}
	for _, call := range []struct {
		name string
		f    func()
	}{
		{"Write", func() { w.Write(data) }},
		{"Close", func() { w.Close() }},
		{"CloseWithError", func() { w.CloseWithError(nil) }},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "Writer."+call.name+" called while another") {
					t.Errorf("%s during ReadFrom: recovered %v, want a panic naming it", call.name, p)
				}
			}()
			call.f()
		}()
	}
	if _, err := pw.Write(data[kib:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("ReadFrom: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	sameBytes(t, "stored", e.content("racy"), data)
}

// TestUseAfterClose: a Write after a successful Close, and NewWriter on a
// closed client, are the caller's mistakes, not the service's answers:
// their code is Canceled, they match fs.ErrClosed, and
// its code is not FailedPrecondition.
func TestUseAfterClose(t *testing.T) {
	e := newEnv(t)
	w, err := e.c.NewWriter(context.Background(), bucket, "once")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, werr := w.Write([]byte("x"))
	_, rerr := w.ReadFrom(strings.NewReader("x"))
	e.c.Close()
	_, nerr := e.c.NewWriter(context.Background(), bucket, "o")
	for _, err := range []error{werr, rerr, nerr} {
		if uploader.CodeOf(err) != codes.Canceled || !errors.Is(err, fs.ErrClosed) || uploader.CodeOf(err) == codes.FailedPrecondition {
			t.Errorf("%v (code %v): want Canceled, matching fs.ErrClosed", err, uploader.CodeOf(err))
		}
	}
}

// TestResumeErrorNamesTheFailedRPC: when the resume itself fails, the error
// names QueryWriteStatus, not the stream.
func TestResumeErrorNamesTheFailedRPC(t *testing.T) {
	e := newEnv(t)
	e.srv.BreakStream("BidiWriteObject", q, codes.Unavailable)
	e.srv.FailCall("QueryWriteStatus", 1, codes.NotFound)
	_, err := e.c.Upload(context.Background(), bucket, "resume-fails", bytes.NewReader(payload(2*mib, 4)))
	var oe *uploader.Error
	if !errors.As(err, &oe) || oe.Op != "QueryWriteStatus" || oe.Code != codes.NotFound {
		t.Fatalf("Upload = %v (%+v), want a NotFound error of QueryWriteStatus", err, oe)
	}
	e.absent("resume-fails")
}

// TestCloseTwice: a second Client.Close returns nil; NewWriter on a closed
// client fails.
func TestCloseTwice(t *testing.T) {
	e := newEnv(t)
	if err := e.c.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := e.c.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	if _, err := e.c.NewWriter(context.Background(), bucket, "o"); err == nil {
		t.Fatal("NewWriter on a closed client succeeded")
	}
}

// TestNegativeRetrySettingsRejected: negative retry fields are errors, not
// silently replaced by defaults.
func TestNegativeRetrySettingsRejected(t *testing.T) {
	e := newEnv(t)
	bad := map[string]uploader.Retry{
		"backoff":         {Backoff: gax.Backoff{Initial: -time.Second}},
		"multiplier":      {Backoff: gax.Backoff{Multiplier: 0.5}},
		"max below init":  {Backoff: gax.Backoff{Initial: time.Second, Max: time.Millisecond}},
		"deadline":        {Deadline: -time.Second},
		"attempt timeout": {AttemptTimeout: -1},
		"max attempts":    {MaxAttempts: -2},
		"policy":          {Policy: uploader.RetryPolicy(7)},
	}
	for name, o := range bad {
		if _, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), uploader.WithRetry(o))...); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Errorf("%s: NewClient = %v, want InvalidArgument", name, err)
		}
		if _, err := e.c.NewWriter(context.Background(), bucket, "o", uploader.WithRetry(o)); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Errorf("%s: NewWriter = %v, want InvalidArgument", name, err)
		}
	}
	if _, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), experimental.WithKeepalive(-1, 0))...); uploader.CodeOf(err) != codes.InvalidArgument {
		t.Errorf("negative keepalive: NewClient = %v, want InvalidArgument", err)
	}
}

// TestEmulatorHTTPSDialsTLS: STORAGE_EMULATOR_HOST_GRPC with https:// dials
// with TLS, plain host:port and http:// in plaintext. A listener reads the
// first bytes the client sends: a TLS ClientHello starts with 0x16, HTTP/2's
// plaintext preface with "PRI".
func TestEmulatorHTTPSDialsTLS(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		first  byte
	}{{"https://", 0x16}, {"http://", 'P'}, {"", 'P'}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan byte, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			var b [1]byte
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(c, b[:]); err == nil {
				got <- b[0]
			}
		}()
		t.Setenv("STORAGE_EMULATOR_HOST_GRPC", tc.scheme+ln.Addr().String())
		c, err := uploader.NewClient(context.Background(), uploader.WithRetry(uploader.Retry{Policy: uploader.RetryNever, AttemptTimeout: 2 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		go c.Upload(context.Background(), bucket, "o", bytes.NewReader([]byte("x")))
		select {
		case b := <-got:
			if b != tc.first {
				t.Errorf("%q: first byte %#x, want %#x", tc.scheme, b, tc.first)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%q: the client never connected", tc.scheme)
		}
		c.Close()
		ln.Close()
	}
}
