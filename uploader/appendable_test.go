package uploader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/header"
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
			if got := e.countCalls("BidiWriteObject") - before; !lose && got != 1 {
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

// TestAppendableRecovers breaks an appendable object's stream in the ways
// a network and the service do, and checks that the bytes are resent from
// the service's persisted size, neither lost nor duplicated: a stream
// broken by the service after some bytes, the connection reset while data
// goes up, and redirects (the retry test API's instructions: a redirect
// with a write handle and routing token, which the reopened stream must
// carry).
func TestAppendableRecovers(t *testing.T) {
	var testID string // the retry test, whose instructions must all be consumed
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *env) (*uploader.Client, context.Context)
	}{
		{"stream broken after 600 KiB", func(t *testing.T, e *env) (*uploader.Client, context.Context) {
			e.srv.BreakStream("BidiWriteObject", 600<<10, codes.Unavailable)
			return e.c, context.Background()
		}},
		{"connection reset 300 KiB up", func(t *testing.T, e *env) (*uploader.Client, context.Context) {
			c, p := proxied(t, e, "gRPC")
			p.Inject(faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up, After: 300 << 10})
			return c, context.Background()
		}},
		{"redirected mid-stream after 600 KiB", func(t *testing.T, e *env) (*uploader.Client, context.Context) {
			e.srv.RedirectAppend(600<<10, "mid-stream")
			return e.c, context.Background()
		}},
		{"redirected at open, twice", func(t *testing.T, e *env) (*uploader.Client, context.Context) {
			e.srv.RedirectAppend(0, "first")
			e.srv.RedirectAppend(0, "second")
			return e.c, context.Background()
		}},
		{"redirected with handle and token", func(t *testing.T, e *env) (*uploader.Client, context.Context) {
			testID = armRetryTest(t, e, "GRPC", "storage.objects.insert", "redirect-send-handle-and-token-toka", "redirect-expect-token-toka", "return-503")
			return e.c, header.Append(context.Background(), "x-retry-test-id", testID)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			testID = ""
			c, ctx := tc.setup(t, e)
			w, err := c.NewWriter(ctx, bucket, "log", uploader.WithAppendable())
			if err != nil {
				t.Fatal(err)
			}
			var all []byte
			for i, n := range []int{1 << 10, 1<<20 + 3, 5} {
				p := payload(n, uint64(i))
				all = append(all, p...)
				w.Write(p)
				got, err := w.Flush(ctx)
				if err != nil || got != int64(len(all)) {
					t.Fatalf("flush %d: %d, %v; want %d", i, got, err, len(all))
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "object", e.content("log"), all)
			if testID != "" {
				resp, err := http.Get(e.srv.HTTPURL() + "/retry_test/" + testID)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var rt struct{ Completed bool }
				if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil || !rt.Completed {
					t.Fatalf("retry test %s: completed %v, %v: the reopened stream did not carry the routing token", testID, rt.Completed, err)
				}
			}
		})
	}
}

// TestFlushContext: a Flush whose answer is held back by a stalled path
// returns its context's error when that ends, and the upload goes on: the
// next Flush returns the whole size once the path recovers, and Close
// finalizes the object whole.
func TestFlushContext(t *testing.T) {
	e := newEnv(t)
	c, p := proxied(t, e, "gRPC")
	ctx := context.Background()
	w, err := c.NewWriter(ctx, bucket, "log", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("first"))
	if _, err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Down, Stall: time.Second})
	w.Write([]byte(" second"))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := w.Flush(short); uploader.CodeOf(err) != codes.DeadlineExceeded {
		t.Fatalf("Flush past its context: %v, want DeadlineExceeded", err)
	}
	if got, err := w.Flush(ctx); err != nil || got != int64(len("first second")) {
		t.Fatalf("Flush after the stall: %d, %v", got, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "object", e.content("log"), []byte("first second"))
}

// TestAppendableLeftOpen: WithoutFinalize leaves the object unfinalized
// at Close, and CloseWithError leaves it with what was flushed; a takeover
// then finalizes it.
func TestAppendableLeftOpen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, err := e.c.NewWriter(ctx, bucket, "kept", uploader.WithAppendable(), uploader.WithoutFinalize())
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("kept open"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if a := w.Attrs(); a.Size != 9 || !a.Finalized.IsZero() || a.Generation == 0 {
		t.Fatalf("attrs of the open object: size %d, finalized %v, generation %d", a.Size, a.Finalized, a.Generation)
	}
	sameBytes(t, "open object", e.content("kept"), []byte("kept open"))

	a, err := e.c.NewWriter(ctx, bucket, "aborted", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("flushed"))
	if _, err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	a.Write([]byte(" never flushed"))
	a.CloseWithError(errors.New("abandoned"))
	o, err := e.srv.Object(bucket, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "abandoned object", o.Content, []byte("flushed"))

	w2, off, err := e.c.TakeOver(ctx, bucket, "aborted", o.Generation)
	if err != nil || off != 7 {
		t.Fatalf("takeover: %d, %v", off, err)
	}
	w2.Write([]byte(", then finished"))
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "finished object", e.content("aborted"), []byte("flushed, then finished"))
	if w2.Attrs().Finalized.IsZero() {
		t.Fatal("the takeover's Close did not finalize")
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
