package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
)

// TestAppendableFinishAnswerLost: the answer to the finish of an appendable
// object is lost after the service finalized it; Close reopens the object,
// finds it finalized and reports it stored, as for any upload.
func TestAppendableFinishAnswerLost(t *testing.T) {
	for _, takeover := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover=%v", takeover), func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			first := payload(300<<10, 3)
			w, err := e.c.NewWriter(ctx, bucket, "o", uploader.WithAppendable())
			if err != nil {
				t.Fatal(err)
			}
			w.Write(first)
			if _, err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			all := first
			if takeover {
				w.CloseWithError(errors.New("handed over"))
				o, err := e.srv.Object(bucket, "o")
				if err != nil {
					t.Fatal(err)
				}
				if w, _, err = e.c.TakeOver(ctx, bucket, "o", o.Generation); err != nil {
					t.Fatal(err)
				}
				w.Write([]byte("more"))
				all = append(append([]byte(nil), first...), "more"...)
			}
			if takeover {
				// The first writer's stream, which the takeover ended,
				// may still be ending at the service: it is counted
				// before the calls to finish are.
				waitCalls(t, e, "BidiWriteObject", 1)
			}
			e.srv.LoseAnswer("BidiWriteObject")
			before := e.countCalls("BidiWriteObject")
			if err := w.Close(); err != nil {
				t.Fatalf("Close after a lost answer: %v", err)
			}
			// One stream finishes, one reopens the object and finds it
			// finalized: no retries until the deadline.
			if n := e.countCalls("BidiWriteObject") - before; n > 2 {
				t.Fatalf("%d streams to finish the object, want at most 2", n)
			}
			sameBytes(t, "object", e.content("o"), all)
			if w.Attrs().Finalized.IsZero() {
				t.Fatal("not finalized")
			}
		})
	}
}

// TestAppendableOptionsKept: what the options of an appendable object
// promise holds through the public API. TakeOver takes WithoutFinalize (its
// doc says so) and leaves the object open; a wrong WithSendCRC32C is
// DataLoss, and the object is not finalized.
func TestAppendableOptionsKept(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := payload(10<<10, 3)
	w1, err := e.c.NewWriter(ctx, bucket, "open", uploader.WithAppendable(), uploader.WithoutFinalize())
	if err != nil {
		t.Fatal(err)
	}
	w1.Write(first)
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	o, err := e.srv.Object(bucket, "open")
	if err != nil {
		t.Fatal(err)
	}
	w2, offset, err := e.c.TakeOver(ctx, bucket, "open", o.Generation, uploader.WithoutFinalize())
	if err != nil {
		t.Fatalf("TakeOver with WithoutFinalize: %v", err)
	}
	if offset != int64(len(first)) {
		t.Fatalf("takeover at %d, want %d", offset, len(first))
	}
	w2.Write([]byte("more"))
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if o, err := e.srv.Object(bucket, "open"); err != nil || !o.Finalized.IsZero() || o.Size != int64(len(first))+4 {
		t.Fatalf("after the takeover's Close: %+v, %v; want %d bytes, unfinalized", o.ObjectAttrs, err, len(first)+4)
	}

	for _, tc := range []struct {
		name   string
		upload func(opts ...uploader.WriterOption) error
	}{
		{"Upload", func(opts ...uploader.WriterOption) error {
			_, err := e.c.Upload(ctx, bucket, "crc", bytes.NewReader([]byte("hello")), opts...)
			return err
		}},
		{"Writer", func(opts ...uploader.WriterOption) error {
			w, err := e.c.NewWriter(ctx, bucket, "crc", opts...)
			if err != nil {
				return err
			}
			w.Write(payload(300<<10, 4))
			if _, err := w.Flush(ctx); err != nil {
				return err
			}
			return w.Close()
		}},
	} {
		t.Run("wrong CRC32C, "+tc.name, func(t *testing.T) {
			err := tc.upload(uploader.WithAppendable(), uploader.WithSendCRC32C(0xdeadbeef))
			if uploader.CodeOf(err) != codes.DataLoss || uploader.IsOutcomeUnknown(err) {
				t.Fatalf("got %v, want DataLoss", err)
			}
			if o, err := e.srv.Object(bucket, "crc"); err == nil && !o.Finalized.IsZero() {
				t.Fatal("the object was finalized")
			}
		})
	}
}

// TestAppendableFirstOpenLost: the stream that creates an appendable
// object breaks before its answer. The object may exist, and a late copy of
// that stream would replace any generation the Writer went on with, taking
// the flushed bytes along; so the Writer stops with an unknown outcome
// rather than open the object again, and a Writer made anew writes it.
func TestAppendableFirstOpenLost(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.srv.BreakStream("BidiWriteObject", 0, codes.Unavailable)
	w, err := e.c.NewWriter(ctx, bucket, "log", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	w.Write(payload(kib, 55))
	if _, err := w.Flush(ctx); !uploader.IsOutcomeUnknown(err) {
		t.Fatalf("Flush after the first stream broke: %v, want an unknown outcome", err)
	}
	w.CloseWithError(nil)
	data := payload(kib, 56)
	if _, err := e.c.Upload(ctx, bucket, "log", bytes.NewReader(data), uploader.WithAppendable()); err != nil {
		t.Fatalf("a new upload: %v", err)
	}
	sameBytes(t, "log", e.content("log"), data)
}

// waitCalls waits, for at most ten seconds, until n calls of method have
// ended at the service.
func waitCalls(t *testing.T, e *env, method string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.countCalls(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls of %s ended at the service, want %d", e.countCalls(method), method, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
