package uploadertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

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
	// One connection: the stall fires on the next bytes down any of the
	// client's connections, and a pool's idle connection whose handshake
	// finished late took it once (1 of 3 runs of the suite under -race
	// beside CPU loops), leaving the stream's path unstalled.
	c, p := proxied(t, e, "gRPC", option.WithGRPCConnectionPool(1))
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
