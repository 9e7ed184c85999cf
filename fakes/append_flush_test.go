package fakes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// persistedOf checks that r reports the persisted size n, with the CRC32C
// of want[:n] and a write handle, and returns the handle.
func persistedOf(t *testing.T, r *wire.BidiWriteObjectResponse, want []byte, n int) []byte {
	t.Helper()
	if r.GetPersistedSize() != int64(n) || r.GetPersistedDataChecksums().GetCrc32C() != crcOf(want[:n]) || len(handleOf(t, r)) == 0 {
		t.Fatalf("response %v; want persisted size %d with its CRC32C and a write handle", r, n)
	}
	return handleOf(t, r)
}

// TestAppendableFlush checks what an appendable write persists: only what
// a flush (or finish_write, or a clean half-close) covers; a stream that
// breaks loses the rest. Readers see the persisted bytes only, and every
// response carries the write handle.
func TestAppendableFlush(t *testing.T) {
	const k = 1 << 10
	body := payload(8*k, 91)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context)
	}{
		{"bytes not flushed are pending", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", data(0, body[:k])))
			first := a.must()
			if first.GetResource().GetSize() != 0 || len(handleOf(t, first)) == 0 {
				t.Fatalf("first response: %v; want the empty object and a handle", first)
			}
			unfinalized(t, srv, cc, "obj", nil)
			a.send(data(k, body[k:2*k]))
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: 2 * k, StateLookup: true})
			persistedOf(t, a.must(), body, 0)
			unfinalized(t, srv, cc, "obj", nil)
			a.send(lookup(data(2*k, body[2*k:3*k])))
			persistedOf(t, a.must(), body, 3*k)
			unfinalized(t, srv, cc, "obj", body[:3*k])
			a.send(flushed(data(3*k, body[3*k:4*k]))) // a flush alone gets no answer
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: 4 * k, StateLookup: true})
			persistedOf(t, a.must(), body, 4*k)
			unfinalized(t, srv, cc, "obj", body[:4*k])
		}},
		{"a cancelled stream loses what it did not flush", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			sctx, cancel := context.WithCancel(ctx)
			a := openAppendStream(t, sctx, cc)
			a.send(creating("obj", flushed(data(0, body[:2*k]))))
			gen := a.must().GetResource().GetGeneration()
			a.send(data(2*k, body[2*k:5*k]))
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: 5 * k, StateLookup: true})
			persistedOf(t, a.must(), body, 2*k)
			cancel()
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", gen, nil, &wire.BidiWriteObjectRequest{}))
			if r := b.must(); r.GetResource().GetSize() != 2*k {
				t.Fatalf("takeover after the cancel: %v; want the 2 KiB persisted", r)
			}
			unfinalized(t, srv, cc, "obj", body[:2*k])
			b.send(data(2*k, body[2*k:]))
			b.send(finish(int64(len(body)), body))
			if r := b.must(); r.GetResource().GetSize() != int64(len(body)) {
				t.Fatalf("finish: %v", r)
			}
			b.done()
			sameBytes(t, "object", get(t, cc, "obj"), body)
		}},
		{"a stream the server breaks loses what it did not flush", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			srv.BreakStream(fakes.MethodBidiWriteObject, 3*k, codes.Unavailable)
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:2*k]))))
			first := a.must()
			a.send(data(2*k, body[2*k:4*k]))
			_, err := a.recv()
			wantCode(t, err, codes.Unavailable)
			unfinalized(t, srv, cc, "obj", body[:2*k])
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", first.GetResource().GetGeneration(), handleOf(t, first), &wire.BidiWriteObjectRequest{StateLookup: true}))
			persistedOf(t, b.must(), body, 2*k)
		}},
		{"a takeover drops the pending bytes of the writer before", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:k]))))
			gen := a.must().GetResource().GetGeneration()
			a.send(data(k, body[k:2*k]))
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: 2 * k, StateLookup: true})
			persistedOf(t, a.must(), body, k)
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", gen, nil, &wire.BidiWriteObjectRequest{}))
			if r := b.must(); r.GetResource().GetSize() != k {
				t.Fatalf("takeover: %v; want the 1 KiB persisted", r)
			}
			a.send(flushed(&wire.BidiWriteObjectRequest{WriteOffset: 2 * k}))
			_, err := a.recv()
			wantCode(t, err, codes.FailedPrecondition)
			unfinalized(t, srv, cc, "obj", body[:k])
		}},
		{"a handle resumed on another stream fences the stream before", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:k]))))
			first := a.must()
			a.send(data(k, body[k:2*k]))
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", first.GetResource().GetGeneration(), handleOf(t, first), &wire.BidiWriteObjectRequest{StateLookup: true}))
			if h := persistedOf(t, b.must(), body, k); string(h) != string(handleOf(t, first)) {
				t.Fatalf("resumed with handle %q, got %q", handleOf(t, first), h)
			}
			a.send(lookup(&wire.BidiWriteObjectRequest{WriteOffset: 2 * k}))
			_, err := a.recv()
			wantCode(t, err, codes.FailedPrecondition)
		}},
		{"half-close persists and answers with the handle", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", data(0, body[:k])))
			h := handleOf(t, a.must())
			a.send(data(k, body[k:3*k]))
			a.st.CloseSend()
			if got := persistedOf(t, a.must(), body, 3*k); string(got) != string(h) {
				t.Fatalf("half-close handle %q, want %q", got, h)
			}
			a.done()
			unfinalized(t, srv, cc, "obj", body[:3*k])
		}},
		{"finish_write persists and finalizes", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			out, err := bidi(ctx, cc, creating("obj", data(0, body[:k])), data(k, body[k:]), finish(int64(len(body)), body))
			if err != nil || len(out) != 2 || out[1].GetResource().GetSize() != int64(len(body)) {
				t.Fatalf("bidi: %v, %v", out, err)
			}
			sameBytes(t, "object", get(t, cc, "obj"), body)
		}},
		{"finish_write alone creates an empty object", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			for i, msgs := range [][]*wire.BidiWriteObjectRequest{
				{creating("e0", &wire.BidiWriteObjectRequest{FinishWrite: true})},
				{creating("e1", finish(0, nil))},
				{creating("e2", &wire.BidiWriteObjectRequest{}), finish(0, nil)},
			} {
				out, err := bidi(ctx, cc, msgs...)
				res := out[len(out)-1].GetResource()
				if err != nil || res.GetSize() != 0 || res.GetFinalizeTime() == nil || res.GetChecksums().GetCrc32C() != 0 {
					t.Fatalf("case %d: %v, %v; want an empty finalized object", i, out, err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			tc.run(t, srv, cc, ctxT(t))
		})
	}
}

// TestRedirectAppend checks Server.RedirectAppend: the stream is aborted
// with codes.Aborted and a BidiWriteObjectRedirectedError (token, handle,
// generation) once it received the bytes named, what it did not flush is
// lost, and the object reopens only with the routing token.
func TestRedirectAppend(t *testing.T) {
	const k = 1 << 10
	body := payload(8*k, 92)
	withToken := func(ctx context.Context, token string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", "bucket="+bucketRes+"&routing_token="+token)
	}
	for _, tc := range []struct {
		name  string
		after int64
		// sent and persisted before the redirect
		sent, persisted int
		reopen          func(ctx context.Context, m *wire.BidiWriteObjectRequest) (context.Context, *wire.BidiWriteObjectRequest)
	}{
		{"mid-stream, token in the metadata", 4 * k, 5 * k, 2 * k, func(ctx context.Context, m *wire.BidiWriteObjectRequest) (context.Context, *wire.BidiWriteObjectRequest) {
			return withToken(ctx, "tok"), m
		}},
		{"mid-stream, token in the spec", 3 * k, 3 * k, 2 * k, func(ctx context.Context, m *wire.BidiWriteObjectRequest) (context.Context, *wire.BidiWriteObjectRequest) {
			m.GetAppendObjectSpec().RoutingToken = new("tok")
			return ctx, m
		}},
		{"at the first message", 0, 2 * k, 0, func(ctx context.Context, m *wire.BidiWriteObjectRequest) (context.Context, *wire.BidiWriteObjectRequest) {
			return withToken(ctx, "tok"), m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			ctx := ctxT(t)
			srv.RedirectAppend(tc.after, "tok")
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:2*k]))))
			if tc.after > 0 {
				a.must()
				a.send(lookup(data(2*k, body[2*k:tc.sent])))
			}
			_, err := a.recv()
			token, h, gen := redirected(t, err)
			live := unfinalized(t, srv, cc, "obj", body[:tc.persisted])
			if token != "tok" || h == nil || gen == nil || *gen != live {
				t.Fatalf("redirect: token %q, handle %q, generation %v; want tok, a handle and %d", token, h, gen, live)
			}
			// Without the token: redirected again.
			_, err = bidi(ctx, cc, appending("obj", *gen, h, &wire.BidiWriteObjectRequest{StateLookup: true}))
			redirected(t, err)
			rctx, m := tc.reopen(ctx, appending("obj", *gen, h, lookup(data(0, body[:5*k]))))
			b := openAppendStream(t, rctx, cc)
			b.send(m)
			persistedOf(t, b.must(), body, 5*k)
			b.send(data(5*k, body[5*k:]))
			b.send(finish(int64(len(body)), body))
			if r := b.must(); r.GetResource().GetSize() != int64(len(body)) {
				t.Fatalf("finish: %v", r)
			}
			b.done()
			sameBytes(t, "object", get(t, cc, "obj"), body)
			// The token is needed once: the next stream opens without it.
			if _, err := bidi(ctx, cc, appending("obj", *gen, h, finish(int64(len(body)), body))); err != nil {
				t.Fatalf("after the redirect: %v", err)
			}
		})
	}
}

// TestRedirectAppendOfficialClient runs the official client's appendable
// writer through mid-stream redirects: it follows each with the routing
// token and the write handle, resends what was not persisted, and the
// object is whole.
func TestRedirectAppendOfficialClient(t *testing.T) {
	srv, cc := start(t)
	c := officialBidi(t, srv)
	c.SetRetry(storage.WithBackoff(gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	body := payload(9*mib+5, 93)
	for _, tc := range []struct {
		name  string
		after []int64
	}{
		{"once", []int64{3*mib + 100}},
		{"twice", []int64{mib / 2, 2 * mib}},
		{"at open", []int64{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := aborted(srv)
			for _, n := range tc.after {
				srv.RedirectAppend(n, "tok-"+tc.name)
			}
			name := strings.ReplaceAll(tc.name, " ", "-")
			w := c.Bucket(bucket).Object(name).NewWriter(ctxT(t))
			w.Append, w.FinalizeOnClose, w.ChunkSize = true, true, 2*mib
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "object", get(t, cc, name), body)
			if got := aborted(srv) - before; got != int64(len(tc.after)) {
				t.Fatalf("%d streams redirected, want %d", got, len(tc.after))
			}
		})
	}
}

// aborted counts the BidiWriteObject calls that ended with codes.Aborted.
func aborted(srv *fakes.Server) int64 {
	var n int64
	for _, c := range srv.CallCounts() {
		if c.Method == fakes.MethodBidiWriteObject && c.Code == codes.Aborted {
			n += c.Count
		}
	}
	return n
}
