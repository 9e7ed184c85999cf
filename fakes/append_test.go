package fakes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/callctx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// appendStream is one BidiWriteObject stream, driven message by message.
type appendStream struct {
	t  *testing.T
	st grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]
}

func openAppendStream(t *testing.T, ctx context.Context, cc *grpc.ClientConn) *appendStream {
	t.Helper()
	st, err := wire.NewBidiWriteObjectStream(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	return &appendStream{t: t, st: st}
}

// send sends m; a stream the server ended reports its status on recv.
func (a *appendStream) send(m *wire.BidiWriteObjectRequest) { a.st.Send(m) }

func (a *appendStream) recv() (*wire.BidiWriteObjectResponse, error) { return a.st.Recv() }

// must receives a response, failing the test on an error.
func (a *appendStream) must() *wire.BidiWriteObjectResponse {
	a.t.Helper()
	r, err := a.st.Recv()
	if err != nil {
		a.t.Fatalf("Recv: %v", err)
	}
	return r
}

// done checks that the stream ended with OK and nothing more.
func (a *appendStream) done() {
	a.t.Helper()
	if r, err := a.st.Recv(); !errors.Is(err, io.EOF) {
		a.t.Fatalf("Recv: %v, %v; want the stream's end", r, err)
	}
}

// data is a message with content at off and its CRC32C.
func data(off int64, content []byte) *wire.BidiWriteObjectRequest {
	crc := crcOf(content)
	return &wire.BidiWriteObjectRequest{
		WriteOffset: off,
		Data:        &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: content, Crc32C: &crc}},
	}
}

// finish is a message that finalizes at off, with the CRC32C of whole.
func finish(off int64, whole []byte) *wire.BidiWriteObjectRequest {
	crc := crcOf(whole)
	return &wire.BidiWriteObjectRequest{WriteOffset: off, FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc}}
}

// creating makes m the first message of an appendable write of name.
func creating(name string, m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	s := spec(name)
	s.Appendable = new(true)
	m.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: s}
	return m
}

// appending makes m the first message of a write to generation gen of the
// appendable object name, with write handle h if h is not nil.
func appending(name string, gen int64, h []byte, m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	s := &wire.AppendObjectSpec{Bucket: bucketRes, Object: name, Generation: gen}
	if h != nil {
		s.WriteHandle = &wire.BidiWriteHandle{Handle: h}
	}
	m.FirstMessage = &wire.BidiWriteObjectRequest_AppendObjectSpec{AppendObjectSpec: s}
	return m
}

// handleOf returns the write handle of a response, or nil.
func handleOf(t *testing.T, r *wire.BidiWriteObjectResponse) []byte {
	t.Helper()
	return r.GetWriteHandle().GetHandle()
}

// lookup makes m flush and ask for the persisted size, as clients do.
func lookup(m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	m.StateLookup, m.Flush = true, true
	return m
}

// flushed makes m flush: the bytes received so far are persisted.
func flushed(m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	m.Flush = true
	return m
}

// unfinalized checks that name is an unfinalized appendable object whose
// content is want, over gRPC and JSON, and returns its generation.
func unfinalized(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, name string, want []byte) int64 {
	t.Helper()
	o, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: name})
	if err != nil {
		t.Fatal(err)
	}
	if o.GetSize() != int64(len(want)) || o.GetFinalizeTime() != nil || o.GetChecksums().GetCrc32C() != crcOf(want) || o.GetChecksums().GetMd5Hash() != nil {
		t.Fatalf("GetObject: size %d, finalize_time %v, checksums %v; want size %d, no finalize_time, CRC32C %#x, no MD5", o.GetSize(), o.GetFinalizeTime(), o.GetChecksums(), len(want), crcOf(want))
	}
	sameBytes(t, "ReadObject", get(t, cc, name), want)
	got, st := httpGet(t, srv, name)
	if st != http.StatusOK {
		t.Fatalf("JSON read: status %d", st)
	}
	sameBytes(t, "JSON read", got, want)
	r := do(t, srv, "GET", objPath(name), nil)
	if r.status != http.StatusOK || strings.Contains(string(r.body), "md5Hash") || strings.Contains(string(r.body), "timeFinalized") {
		t.Fatalf("JSON resource: %d %s; want one with no md5Hash and no timeFinalized", r.status, r.body)
	}
	r = do(t, srv, "GET", objPath(name)+"?alt=media", nil)
	if h := r.header.Values("X-Goog-Hash"); len(h) != 1 || strings.Contains(h[0], "md5") {
		t.Fatalf("x-goog-hash %q: want the CRC32C alone", h)
	}
	a, err := srv.Object(bucket, name)
	if err != nil || a.MD5 != nil || !a.Finalized.IsZero() || a.Size != int64(len(want)) {
		t.Fatalf("Server.Object: %+v, %v", a.ObjectAttrs, err)
	}
	return o.GetGeneration()
}

// TestAppendableWrites drives appendable writes message by message: the
// object is readable as flushes grow it, the first response carries it
// and a write handle, a handle resumes the writer, a takeover fences the
// writer before it, and finish_write finalizes.
func TestAppendableWrites(t *testing.T) {
	const k = 1 << 10
	body := payload(2*mib+5, 80)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context)
	}{
		{"create, read while unfinalized, finalize", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:mib]))))
			first := a.must()
			res := first.GetResource()
			if res.GetGeneration() == 0 || res.GetSize() != mib || res.GetFinalizeTime() != nil || res.GetChecksums().GetCrc32C() != crcOf(body[:mib]) || len(handleOf(t, first)) == 0 {
				t.Fatalf("first response: %v, handle %q; want the unfinalized object of 1 MiB and a write handle", first, handleOf(t, first))
			}
			unfinalized(t, srv, cc, "obj", body[:mib])
			a.send(lookup(data(mib, body[mib:])))
			r := a.must()
			if r.GetPersistedSize() != int64(len(body)) || r.GetPersistedDataChecksums().GetCrc32C() != crcOf(body) {
				t.Fatalf("state lookup: %v; want the persisted size and its CRC32C", r)
			}
			if gen := unfinalized(t, srv, cc, "obj", body); gen != res.GetGeneration() {
				t.Fatalf("generation %d, want %d", gen, res.GetGeneration())
			}
			a.send(finish(int64(len(body)), body))
			res = a.must().GetResource()
			if res.GetSize() != int64(len(body)) || res.GetFinalizeTime() == nil || res.GetChecksums().GetMd5Hash() != nil {
				t.Fatalf("finalized: %v; want a finalize_time and no MD5", res)
			}
			a.done()
			sameBytes(t, "finalized", get(t, cc, "obj"), body)
			if a, err := srv.Object(bucket, "obj"); err != nil || a.Finalized.IsZero() || a.MD5 != nil {
				t.Fatalf("Server.Object: %+v, %v", a.ObjectAttrs, err)
			}
		}},
		{"half-close persists; the handle resumes, overlap dropped", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", data(0, body[:mib])))
			first := a.must()
			gen, h := first.GetResource().GetGeneration(), handleOf(t, first)
			a.st.CloseSend()
			if r := a.must(); r.GetPersistedSize() != mib {
				t.Fatalf("half-close: %v; want the persisted size", r)
			}
			a.done()
			unfinalized(t, srv, cc, "obj", body[:mib])
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", gen, h, flushed(data(0, body[:mib+300*k]))))
			if r := b.must(); r.GetPersistedSize() != mib+300*k || string(handleOf(t, r)) != string(h) {
				t.Fatalf("resumed: %v; want the persisted size and the same handle", r)
			}
			b.send(data(mib+100*k, body[mib+100*k:]))
			b.send(finish(int64(len(body)), body))
			if r := b.must(); r.GetResource().GetSize() != int64(len(body)) {
				t.Fatalf("finish: %v", r)
			}
			b.done()
			sameBytes(t, "object", get(t, cc, "obj"), body)
		}},
		{"a takeover fences the writer before", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:256*k]))))
			first := a.must()
			gen, ha := first.GetResource().GetGeneration(), handleOf(t, first)
			b := openAppendStream(t, ctx, cc)
			b.send(appending("obj", 0, nil, &wire.BidiWriteObjectRequest{}))
			r := b.must()
			hb := handleOf(t, r)
			if r.GetResource().GetSize() != 256*k || r.GetResource().GetGeneration() != gen || len(hb) == 0 || string(hb) == string(ha) {
				t.Fatalf("takeover: %v, handle %q (before: %q); want the object and a new handle", r, hb, ha)
			}
			a.send(data(256*k, body[256*k:mib]))
			_, err := a.recv()
			wantCode(t, err, codes.FailedPrecondition)
			c := openAppendStream(t, ctx, cc)
			c.send(appending("obj", gen, ha, data(256*k, body[256*k:mib])))
			_, err = c.recv()
			wantCode(t, err, codes.FailedPrecondition)
			b.send(data(256*k, body[256*k:]))
			b.send(finish(int64(len(body)), body))
			if r := b.must(); r.GetResource().GetFinalizeTime() == nil {
				t.Fatalf("finish: %v", r)
			}
			b.done()
			sameBytes(t, "object", get(t, cc, "obj"), body)
		}},
		{"a takeover checks metageneration preconditions", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			if _, err := bidi(ctx, cc, creating("obj", data(0, body[:k]))); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				match, notMatch *int64
				code            codes.Code
			}{
				{new(int64(2)), nil, codes.FailedPrecondition},
				{nil, new(int64(1)), codes.FailedPrecondition},
				{new(int64(1)), new(int64(2)), codes.OK},
			} {
				m := appending("obj", 0, nil, finish(k, body[:k]))
				m.GetAppendObjectSpec().IfMetagenerationMatch = tc.match
				m.GetAppendObjectSpec().IfMetagenerationNotMatch = tc.notMatch
				_, err := bidi(ctx, cc, m)
				wantCode(t, err, tc.code)
			}
		}},
		{"a finalized object takes a retried finish_write, no more data", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", data(0, body[:mib])))
			first := a.must()
			gen, h := first.GetResource().GetGeneration(), handleOf(t, first)
			a.send(finish(mib, body[:mib]))
			a.must()
			a.done()
			for _, tc := range []struct {
				name   string
				handle []byte
				m      *wire.BidiWriteObjectRequest
				code   codes.Code
			}{
				{"retried finish_write", h, finish(mib, body[:mib]), codes.OK},
				{"resent tail and finish_write", h, func() *wire.BidiWriteObjectRequest {
					m := data(mib-k, body[mib-k:mib])
					m.FinishWrite = true
					return m
				}(), codes.OK},
				{"more data", h, data(mib, body[mib:]), codes.FailedPrecondition},
				{"takeover", nil, data(mib, body[mib:]), codes.FailedPrecondition},
			} {
				out, err := bidi(ctx, cc, appending("obj", gen, tc.handle, tc.m))
				wantCode(t, err, tc.code)
				if err == nil && (len(out) != 1 || out[0].GetResource().GetSize() != mib) {
					t.Fatalf("%s: %v; want the object", tc.name, out)
				}
			}
		}},
		{"rejects", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			put(t, cc, "plain", []byte("x"))
			if _, err := bidi(ctx, cc, creating("open", data(0, body[:k]))); err != nil {
				t.Fatal(err)
			}
			withSums := func(m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
				crc := crcOf(body[:k])
				m.ObjectChecksums = &wire.ObjectChecksums{Crc32C: &crc}
				return m
			}
			md5 := finish(k, body[:k])
			md5.ObjectChecksums.Md5Hash = make([]byte, 16)
			badCRC := finish(k, body[:k+1])
			exists := creating("plain", data(0, body[:k]))
			exists.GetWriteObjectSpec().IfGenerationMatch = new(int64(0))
			for _, tc := range []struct {
				name string
				msgs []*wire.BidiWriteObjectRequest
				code codes.Code
			}{
				{"object_checksums before finish_write", []*wire.BidiWriteObjectRequest{creating("r1", withSums(data(0, body[:k])))}, codes.InvalidArgument},
				{"an MD5", []*wire.BidiWriteObjectRequest{appending("open", 0, nil, md5)}, codes.InvalidArgument},
				{"a wrong CRC32C", []*wire.BidiWriteObjectRequest{appending("open", 0, nil, badCRC)}, codes.InvalidArgument},
				{"a gap", []*wire.BidiWriteObjectRequest{appending("open", 0, nil, data(k+1, body[:k]))}, codes.InvalidArgument},
				{"a handle it did not issue", []*wire.BidiWriteObjectRequest{appending("open", 0, []byte("x"), data(k, body[:k]))}, codes.InvalidArgument},
				{"no appendable object", []*wire.BidiWriteObjectRequest{appending("plain", 0, nil, data(1, body[:k]))}, codes.FailedPrecondition},
				{"no object", []*wire.BidiWriteObjectRequest{appending("missing", 0, nil, data(0, body[:k]))}, codes.NotFound},
				{"a failed precondition at creation", []*wire.BidiWriteObjectRequest{exists}, codes.FailedPrecondition},
			} {
				_, err := bidi(ctx, cc, tc.msgs...)
				if status.Code(err) != tc.code {
					t.Fatalf("%s: got %v, want %v", tc.name, err, tc.code)
				}
			}
			absent(t, cc, "r1")
			sameBytes(t, "untouched", get(t, cc, "plain"), []byte("x"))
			unfinalized(t, srv, cc, "open", body[:k])
		}},
		{"an unfinalized object is neither overwritten nor deleted", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:k]))))
			gen := a.must().GetResource().GetGeneration()
			for _, tc := range []struct {
				name string
				do   func() error
			}{
				{"WriteObject", func() error {
					_, err := writeObject(ctx, cc, chunks([]byte("new"), k, withSpec(spec("obj")))...)
					return err
				}},
				{"DeleteObject", func() error {
					return cc.Invoke(ctx, wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "obj"}, &wire.Object{})
				}},
				{"DeleteObject of the generation", func() error {
					return cc.Invoke(ctx, wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "obj", Generation: gen}, &wire.Object{})
				}},
				{"JSON upload", func() error {
					if r := do(t, srv, "POST", uploadPath("media", "obj"), []byte("new")); r.status != http.StatusBadRequest {
						return fmt.Errorf("status %d: %s", r.status, r.body)
					}
					return status.Error(codes.FailedPrecondition, "")
				}},
				{"JSON delete", func() error {
					if r := do(t, srv, "DELETE", objPath("obj"), nil); r.status != http.StatusBadRequest {
						return fmt.Errorf("status %d: %s", r.status, r.body)
					}
					return status.Error(codes.FailedPrecondition, "")
				}},
			} {
				if err := tc.do(); status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("%s: %v, want FailedPrecondition", tc.name, err)
				}
			}
			a.send(data(k, body[k:2*k]))
			a.send(finish(2*k, body[:2*k]))
			if r := a.must(); r.GetResource().GetGeneration() != gen || r.GetResource().GetSize() != 2*k {
				t.Fatalf("finish: %v", r)
			}
			a.done()
			put(t, cc, "obj", []byte("new"))
			if err := cc.Invoke(ctx, wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "obj"}, &wire.Object{}); err != nil {
				t.Fatalf("delete once finalized: %v", err)
			}
		}},
		{"a new appendable write replaces an unfinalized object and ends its write", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", flushed(data(0, body[:k]))))
			first := a.must()
			gen := first.GetResource().GetGeneration()
			out, err := bidi(ctx, cc, creating("obj", flushed(data(0, body[k:2*k]))))
			if err != nil || out[0].GetResource().GetGeneration() == gen {
				t.Fatalf("new appendable write: %v, %v; want a new generation", out, err)
			}
			unfinalized(t, srv, cc, "obj", body[k:2*k])
			a.send(flushed(data(k, body[k:2*k])))
			_, err = a.recv()
			wantCode(t, err, codes.NotFound)
			_, err = bidi(ctx, cc, appending("obj", gen, handleOf(t, first), data(k, body[k:2*k])))
			if c := status.Code(err); c != codes.NotFound && c != codes.FailedPrecondition {
				t.Fatalf("append to the old generation: %v", err)
			}
		}},
		{"the tenant's usage grows with the object", func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", data(0, body[:k])))
			a.must()
			a.send(lookup(data(k, body[k:3*k])))
			a.must()
			if u := srv.Usage(); len(u) != 1 || u[0].Objects != 1 || u[0].Bytes != 3*k {
				t.Fatalf("usage %+v, want 1 object of 3 KiB", u)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			tc.run(t, srv, cc, ctxT(t))
		})
	}
}

// TestRetryTestGRPCAppendable checks the instructions of the retry test
// API on appendable writes: a cut write gets no answer and keeps the bytes
// before the cut; redirects fail the stream with codes.Aborted and a
// BidiWriteObjectRedirectedError, the handle-and-token one once the first
// message created the object; redirect-expect-token is consumed only by a
// call that sends the token.
func TestRetryTestGRPCAppendable(t *testing.T) {
	body := payload(mib, 81)
	for _, tc := range []struct {
		name         string
		instructions []string
		run          func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context, id string)
	}{
		{"return-503-after-256K", []string{"return-503-after-256K"}, func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context, _ string) {
			a := openAppendStream(t, ctx, cc)
			a.send(creating("obj", lookup(data(0, body))))
			r, err := a.recv()
			wantCode(t, err, codes.Unavailable)
			if r != nil {
				t.Fatalf("a response before the error: %v", r)
			}
			unfinalized(t, srv, cc, "obj", body[:256<<10])
		}},
		{"redirect-send-token", []string{"redirect-send-token-abc"}, func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context, _ string) {
			_, err := bidi(ctx, cc, creating("obj", data(0, body)))
			token, h, gen := redirected(t, err)
			if token != "abc" || h != nil || gen != nil {
				t.Fatalf("redirect: token %q, handle %q, generation %v; want the token alone", token, h, gen)
			}
			absent(t, cc, "obj")
		}},
		{"redirect-send-handle-and-token", []string{"redirect-send-handle-and-token-abc"}, func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context, _ string) {
			_, err := bidi(ctx, cc, creating("obj", data(0, body)))
			token, h, gen := redirected(t, err)
			live := unfinalized(t, srv, cc, "obj", nil)
			if token != "abc" || h == nil || gen == nil || *gen != live {
				t.Fatalf("redirect: token %q, handle %q, generation %v; want the token, a handle and generation %d", token, h, gen, live)
			}
			out, err := bidi(ctx, cc, appending("obj", *gen, h, data(0, body)), finish(mib, body))
			if err != nil || len(out) != 2 || out[1].GetResource().GetSize() != mib {
				t.Fatalf("resumed with the handle: %v, %v", out, err)
			}
		}},
		{"redirect-expect-token", []string{"redirect-expect-token-abc"}, func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, ctx context.Context, id string) {
			for _, tc := range []struct {
				params   string
				consumed bool
			}{
				{"bucket=" + bucketRes, false},
				{"appendable=true&routing_token=abd", false},
				{"appendable=true&routing_token=abc", true},
			} {
				ctx := metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", tc.params)
				if _, err := bidi(ctx, cc, creating("obj", finish(0, nil))); err != nil {
					t.Fatal(err)
				}
				if got := retryTest(t, srv, id).Completed; got != tc.consumed {
					t.Fatalf("with x-goog-request-params %q: consumed %v, want %v", tc.params, got, tc.consumed)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.insert": tc.instructions})
			tc.run(t, srv, cc, withTestID(ctxT(t), id), id)
			completed(t, srv, id)
		})
	}
}

// redirected checks that err is codes.Aborted with a
// google.storage.v2.BidiWriteObjectRedirectedError and returns its routing
// token, write handle and generation (nil if unset).
func redirected(t *testing.T, err error) (token string, handle []byte, gen *int64) {
	t.Helper()
	st, _ := status.FromError(err)
	d := st.Proto().GetDetails()
	if st.Code() != codes.Aborted || len(d) != 1 || d[0].GetTypeUrl() != "type.googleapis.com/google.storage.v2.BidiWriteObjectRedirectedError" {
		t.Fatalf("got %v with details %v; want Aborted with a BidiWriteObjectRedirectedError", err, d)
	}
	b := d[0].GetValue()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			token, n = string(v), m
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			_, _, k := protowire.ConsumeTag(v)
			handle, _ = protowire.ConsumeBytes(v[k:])
			n = m
		case num == 3 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			g := int64(v)
			gen, n = &g, m
		default:
			t.Fatalf("unexpected field %d in the redirect error", num)
		}
		if n < 0 {
			t.Fatalf("redirect error: %v", protowire.ParseError(n))
		}
		b = b[n:]
	}
	return token, handle, gen
}

// TestAppendableOfficialClient writes appendable objects with the official
// client's gRPC writer: finalized on close, flushed and left unfinalized
// then taken over, and finalized with a wrong CRC32C, which fails and
// leaves the object unfinalized; and reads them back with it.
func TestAppendableOfficialClient(t *testing.T) {
	srv, cc := start(t)
	c := officialBidi(t, srv)
	c.SetRetry(storage.WithBackoff(gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	b := c.Bucket(bucket)
	body := payload(9*mib+7, 82)
	read := func(t *testing.T, name string) []byte {
		t.Helper()
		r, err := b.Object(name).NewReader(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, o *storage.ObjectHandle)
	}{
		{"finalized on close", func(t *testing.T, o *storage.ObjectHandle) {
			w := o.If(storage.Conditions{DoesNotExist: true}).NewWriter(ctxT(t))
			w.Append, w.FinalizeOnClose, w.ChunkSize = true, true, 4*mib
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			a := w.Attrs()
			if a.Size != int64(len(body)) || a.Finalized.IsZero() || a.MD5 != nil || a.CRC32C != crcOf(body) {
				t.Fatalf("attrs: size %d, finalized %v, MD5 %x, CRC32C %#x", a.Size, a.Finalized, a.MD5, a.CRC32C)
			}
			sameBytes(t, "read", read(t, o.ObjectName()), body)
		}},
		{"flushed, unfinalized, taken over", func(t *testing.T, o *storage.ObjectHandle) {
			w := o.NewWriter(ctxT(t))
			w.Append, w.ChunkSize = true, 4*mib
			if _, err := w.Write(body[:3*mib]); err != nil {
				t.Fatal(err)
			}
			if n, err := w.Flush(); err != nil || n != 3*mib {
				t.Fatalf("Flush: %d, %v", n, err)
			}
			sameBytes(t, "read after the flush", read(t, o.ObjectName()), body[:3*mib])
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			a, err := o.Attrs(ctxT(t))
			if err != nil || !a.Finalized.IsZero() || a.Size != 3*mib {
				t.Fatalf("attrs: %+v, %v; want 3 MiB unfinalized", a, err)
			}
			w2, off, err := o.Generation(a.Generation).NewWriterFromAppendableObject(ctxT(t), &storage.AppendableWriterOpts{ChunkSize: 4 * mib, FinalizeOnClose: true})
			if err != nil || off != 3*mib {
				t.Fatalf("takeover: offset %d, %v", off, err)
			}
			if _, err := w2.Write(body[3*mib:]); err != nil {
				t.Fatal(err)
			}
			if err := w2.Close(); err != nil {
				t.Fatal(err)
			}
			if a := w2.Attrs(); a.Finalized.IsZero() || a.Size != int64(len(body)) {
				t.Fatalf("after the takeover: %+v", a)
			}
			sameBytes(t, "read", read(t, o.ObjectName()), body)
		}},
		{"a wrong final CRC32C", func(t *testing.T, o *storage.ObjectHandle) {
			w := o.NewWriter(ctxT(t))
			w.Append, w.FinalizeOnClose = true, true
			if _, err := w.Write(body[:mib]); err != nil {
				t.Fatal(err)
			}
			w.SendAppendFinalCRC32C, w.AppendFinalCRC32C = true, crcOf(body[:mib])+1
			if err := w.Close(); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Close: %v, want InvalidArgument", err)
			}
			unfinalized(t, srv, cc, o.ObjectName(), body[:mib])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, b.Object(strings.ReplaceAll(tc.name, " ", "-")))
		})
	}
}

// TestRetryTestGRPCAppendableOfficial runs the official client's appendable
// writer under the instruction lists of the retry conformance suite's
// appendable cases that expect success, and checks the object and that
// every instruction was consumed.
func TestRetryTestGRPCAppendableOfficial(t *testing.T) {
	srv, cc := start(t)
	c := officialBidi(t, srv)
	c.SetRetry(storage.WithBackoff(gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	body := payload(8*mib, 83)
	for i, list := range [][]string{
		{"return-503", "return-503"},
		{"return-503-after-4097K", "return-408"},
		{"redirect-send-token-abc", "redirect-expect-token-abc"},
		{"redirect-send-handle-and-token-abc", "redirect-expect-token-abc"},
	} {
		t.Run(strings.Join(list, ","), func(t *testing.T) {
			id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.insert": list})
			ctx := callctx.SetHeaders(ctxT(t), "x-retry-test-id", id)
			name := "obj" + strconv.Itoa(i)
			w := c.Bucket(bucket).Object(name).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
			w.Append, w.FinalizeOnClose, w.ChunkSize = true, true, 4*mib
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			completed(t, srv, id)
			sameBytes(t, "object", get(t, cc, name), body)
		})
	}
}

// TestAppendableConcurrentReads reads an appendable object over gRPC and
// JSON while a writer appends to it: every read is a prefix of what was
// written, with the size and CRC32C of that prefix.
func TestAppendableConcurrentReads(t *testing.T) {
	srv, cc := start(t)
	ctx := ctxT(t)
	const msgs, size = 200, 4 << 10
	body := payload(msgs*size, 84)
	a := openAppendStream(t, ctx, cc)
	a.send(creating("obj", data(0, body[:size])))
	a.must()
	done := make(chan struct{})
	errs := make(chan error, 2)
	for _, read := range []func() ([]byte, int64, uint32, error){
		func() ([]byte, int64, uint32, error) {
			m, got, err := readObject(ctx, cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: "obj"})
			if err != nil || len(m) == 0 {
				return nil, 0, 0, fmt.Errorf("ReadObject: %d messages, %v", len(m), err)
			}
			return got, m[0].GetMetadata().GetSize(), m[0].GetObjectChecksums().GetCrc32C(), nil
		},
		func() ([]byte, int64, uint32, error) {
			req, err := http.NewRequestWithContext(ctx, "GET", srv.HTTPURL()+objPath("obj")+"?alt=media", nil)
			if err != nil {
				return nil, 0, 0, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, 0, 0, err
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			h := resp.Header
			n, _ := strconv.ParseInt(h.Get("X-Goog-Stored-Content-Length"), 10, 64)
			crc, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.Get("X-Goog-Hash"), "crc32c="))
			if err != nil || resp.StatusCode != http.StatusOK || len(crc) != 4 {
				return nil, 0, 0, fmt.Errorf("JSON read: %d, x-goog-hash %q, %v", resp.StatusCode, h.Get("X-Goog-Hash"), err)
			}
			return got, n, binary.BigEndian.Uint32(crc), nil
		},
	} {
		go func() {
			for range msgs {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				got, n, crc, err := read()
				if err == nil && (int64(len(got)) != n || n > int64(len(body)) || !bytes.Equal(got, body[:n]) || crc != crcOf(got)) {
					err = fmt.Errorf("read %d bytes of a size %d object with CRC32C %#x: not a prefix with its CRC32C", len(got), n, crc)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 1; i < msgs; i++ {
		a.send(data(int64(i*size), body[i*size:(i+1)*size]))
	}
	a.send(finish(int64(len(body)), body))
	if r := a.must(); r.GetResource().GetSize() != int64(len(body)) {
		t.Fatalf("finish: %v", r)
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a.done()
	sameBytes(t, "object", get(t, cc, "obj"), body)
}
