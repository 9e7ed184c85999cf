package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// TestAppendableFlushAndFinalize writes an appendable object in steps, as a
// log writer does: each Flush makes what was written durable and readable
// and returns the service's persisted size; Close finalizes the object,
// byte-exact with its CRC32C.
func TestAppendableFlushAndFinalize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []int // bytes written before each Flush
		buffer bool  // the Writer's chunks are the caller's buffer (WithBuffer)
	}{
		{"flush before any write", []int{0, 10, 0}, false},
		{"small appends", []int{1, 100, 1000, 1}, false},
		{"over a chunk", []int{300 << 10, 10, 600 << 10}, false},
		{"many chunks, one flush", []int{3<<20 + 17}, false},
		{"WithBuffer, small appends", []int{1, 100, 40 << 10, 1}, true},
		{"WithBuffer, over the buffer", []int{300 << 10, 10, 600 << 10}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			opts := []uploader.WriterOption{uploader.WithAppendable()}
			if tc.buffer {
				opts = append(opts, uploader.WithBuffer(make([]byte, 256<<10)))
			}
			w, err := e.c.NewWriter(ctx, bucket, "log", opts...)
			if err != nil {
				t.Fatal(err)
			}
			var all []byte
			for i, n := range tc.writes {
				p := payload(n, uint64(i))
				if _, err := w.Write(p); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				all = append(all, p...)
				got, err := w.Flush(ctx)
				if err != nil {
					t.Fatalf("flush %d: %v", i, err)
				}
				if got != int64(len(all)) {
					t.Fatalf("flush %d: persisted %d, want %d", i, got, len(all))
				}
				sameBytes(t, "readable after the flush", e.content("log"), all)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "finalized object", e.content("log"), all)
			a := w.Attrs()
			if a.Size != int64(len(all)) || a.CRC32C != crc32.Checksum(all, castagnoli) || a.Finalized.IsZero() {
				t.Fatalf("attrs: size %d CRC32C %08x finalized %v; want %d, %08x, set", a.Size, a.CRC32C, a.Finalized, len(all), crc32.Checksum(all, castagnoli))
			}
			if _, err := w.Flush(ctx); !errors.Is(err, fs.ErrClosed) || uploader.CodeOf(err) != codes.Canceled {
				t.Fatalf("Flush after Close: %v, want Canceled", err)
			}
		})
	}
}

// TestAppendableSmallObjects checks Upload of small objects as appendable
// writes: each is created and finalized in one BidiWriteObject stream. A
// lost answer leaves the outcome as for any one-shot write: its retry meets
// the lost attempt's object (DoesNotExist), and nothing tells whose it
// is, so the error says the object may be stored (it is).
func TestAppendableSmallObjects(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{0, 1, 1 << 10, 256 << 10} {
		for _, lose := range []bool{false, true} {
			p := payload(n, 7)
			name := fmt.Sprintf("small-%s-%v", sizeName(n), lose)
			if lose {
				e.srv.LoseAnswer("BidiWriteObject")
			}
			before := e.countCalls("BidiWriteObject")
			a, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(p), uploader.WithAppendable(), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
			if lose {
				if !uploader.IsOutcomeUnknown(err) {
					t.Fatalf("%s: %v, want an unknown outcome", name, err)
				}
				sameBytes(t, name, e.content(name), p)
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameBytes(t, name, e.content(name), p)
			if a.Size != int64(n) || a.Finalized.IsZero() || a.CRC32C != crc32.Checksum(p, castagnoli) {
				t.Fatalf("%s: size %d, finalized %v", name, a.Size, a.Finalized)
			}
			// The fake records a stream once it ended there, which may be
			// just after the client read its last answer.
			waitCalls(t, e, "BidiWriteObject", before+1)
			if got := e.countCalls("BidiWriteObject") - before; got != 1 {
				t.Fatalf("%s: %d streams, want 1", name, got)
			}
		}
	}
	if n := e.countCalls("WriteObject"); n != 0 {
		t.Fatalf("%d WriteObject calls for appendable objects", n)
	}
}

// TestAppendableTakeOver checks a takeover: a second writer opens the
// unfinalized object at its generation, learns the persisted size and goes
// on from there; the first writer's next call fails with a clear error, and
// the finalized object is byte-exact with the right CRC32C.
func TestAppendableTakeOver(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := payload(300<<10, 1)
	w1, err := e.c.NewWriter(ctx, bucket, "obj", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	w1.Write(first)
	if _, err := w1.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := e.srv.Object(bucket, "obj")
	if err != nil {
		t.Fatal(err)
	}
	w2, offset, err := e.c.TakeOver(ctx, bucket, "obj", o.Generation)
	if err != nil {
		t.Fatal(err)
	}
	if offset != int64(len(first)) {
		t.Fatalf("takeover at %d, want %d", offset, len(first))
	}
	w1.Write([]byte("late"))
	if _, err := w1.Flush(ctx); err == nil {
		t.Fatal("the first writer flushed after the takeover")
	} else if uploader.CodeOf(err) != codes.FailedPrecondition {
		t.Fatalf("first writer after the takeover: %v, want FailedPrecondition", err)
	}
	w1.Close()
	second := payload(100<<10, 2)
	w2.Write(second)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte(nil), first...), second...)
	sameBytes(t, "object after the takeover", e.content("obj"), all)
	if a := w2.Attrs(); a.CRC32C != crc32.Checksum(all, castagnoli) || a.Size != int64(len(all)) {
		t.Fatalf("attrs: size %d CRC32C %08x", a.Size, a.CRC32C)
	}
}

// TestAppendableBadInput checks the errors an appendable Writer gives
// before anything is sent.
func TestAppendableBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cases := []struct {
		name string
		make func() error
	}{
		{"WithoutFinalize alone", func() error {
			_, err := e.c.NewWriter(ctx, bucket, "o", uploader.WithoutFinalize())
			return err
		}},
		{"parallel", func() error {
			_, err := e.c.NewWriter(ctx, bucket, "o", uploader.WithAppendable(), uploader.WithParallelUpload(uploader.ParallelUpload{Parts: 2}))
			return err
		}},
		{"takeover of generation 0", func() error {
			_, _, err := e.c.TakeOver(ctx, bucket, "o", 0)
			return err
		}},
		{"takeover with attributes", func() error {
			_, _, err := e.c.TakeOver(ctx, bucket, "o", 1, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "text/plain"}))
			return err
		}},
		{"takeover with a precondition", func() error {
			_, _, err := e.c.TakeOver(ctx, bucket, "o", 1, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
			return err
		}},
		{"takeover with MD5", func() error {
			_, _, err := e.c.TakeOver(ctx, bucket, "o", 1, experimental.WithMD5())
			return err
		}},
		{"appendable with MD5", func() error {
			_, err := e.c.NewWriter(ctx, bucket, "o", uploader.WithAppendable(), experimental.WithMD5())
			return err
		}},
		{"appendable with a sent MD5", func() error {
			_, err := e.c.Upload(ctx, bucket, "o", bytes.NewReader([]byte("x")), uploader.WithAppendable(), uploader.WithSendMD5(make([]byte, 16)))
			return err
		}},
		{"resumable and appendable", func() error {
			_, err := e.c.NewWriter(ctx, bucket, "o", uploader.WithAppendable(), uploader.WithResumable())
			return err
		}},
		{"Flush of a plain Writer", func() error {
			w, err := e.c.NewWriter(ctx, bucket, "o")
			if err != nil {
				return err
			}
			defer w.CloseWithError(nil)
			_, err = w.Flush(ctx)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.make(); uploader.CodeOf(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
		})
	}
	if n := len(e.srv.Calls()); n != 0 {
		t.Fatalf("%d calls reached the service", n)
	}
}

// TestZonalBucket: a zonal bucket takes appendable objects only, as GCS
// does; objup writes them there with WithAppendable (Upload, UploadMany and
// a Writer), and a plain upload is refused with nothing stored, as an
// invalid request: never as a failed precondition, which a DoesNotExist
// caller would read as "the object exists".
func TestZonalBucket(t *testing.T) {
	const zonal = "rapid-bkt"
	e := newEnvFake(t, []fakes.Option{fakes.WithZonalBucket(zonal)})
	ctx := context.Background()
	for _, opts := range [][]uploader.WriterOption{nil, {uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}} {
		_, err := e.c.Upload(ctx, zonal, "plain", bytes.NewReader([]byte("x")), opts...)
		if uploader.CodeOf(err) == codes.FailedPrecondition || uploader.CodeOf(err) != codes.InvalidArgument || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("plain upload to a zonal bucket (%d options): %v, want InvalidArgument, not a failed precondition", len(opts), err)
		}
	}
	if _, err := e.srv.Object(zonal, "plain"); err == nil {
		t.Fatal("the refused plain upload stored an object")
	}
	items := make([]uploader.Item, 50)
	for i := range items {
		items[i] = uploader.Item{Name: fmt.Sprintf("many/%d", i), Data: payload(1<<10+i, uint64(i)), Options: []uploader.WriterOption{uploader.WithAppendable()}}
	}
	res, err := e.c.UploadMany(ctx, zonal, items, uploader.WithConcurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
		o, err := e.srv.Object(zonal, items[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		sameBytes(t, items[i].Name, o.Content, items[i].Data)
	}
	big := payload(3<<20+5, 9)
	if _, err := e.c.Upload(ctx, zonal, "big", bytes.NewReader(big), uploader.WithAppendable()); err != nil {
		t.Fatal(err)
	}
	o, err := e.srv.Object(zonal, "big")
	if err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "big", o.Content, big)
	if _, err := e.srv.Object(zonal, "plain"); err == nil {
		t.Fatal("the refused plain upload stored an object")
	}
}

// TestAppendableNeedsGRPC: the JSON API has no appendable objects.
func TestAppendableNeedsGRPC(t *testing.T) {
	e := newEnv(t)
	c := httpClient(t, e.srv.HTTPURL())
	if _, err := c.NewWriter(context.Background(), bucket, "o", uploader.WithAppendable()); uploader.CodeOf(err) != codes.InvalidArgument {
		t.Fatalf("WithAppendable over JSON: %v, want InvalidArgument", err)
	}
	if _, _, err := c.TakeOver(context.Background(), bucket, "o", 1); uploader.CodeOf(err) != codes.InvalidArgument {
		t.Fatalf("TakeOver over JSON: %v, want InvalidArgument", err)
	}
}
