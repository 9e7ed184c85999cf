package sink

import (
	"context"
	"testing"

	"cloud.google.com/go/storage"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/internal/wire"
)

// appendMsg is a message of content at off, with its CRC32C.
func appendMsg(off int, content []byte) *wire.BidiWriteObjectRequest {
	crc := sinkCRC(content)
	return &wire.BidiWriteObjectRequest{
		WriteOffset: int64(off),
		Data:        &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: content, Crc32C: &crc}},
	}
}

// appendCreate makes m the first message of an appendable write of name.
func appendCreate(name string, m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	s := sinkSpec(name)
	s.Appendable = new(true)
	m.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: s}
	return m
}

// appendReopen makes m the first message of a stream that reopens
// generation gen of name, with handle h if not nil.
func appendReopen(name string, gen int64, h []byte, m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
	s := &wire.AppendObjectSpec{Bucket: api.BucketPrefix + sinkBucket, Object: name, Generation: gen}
	if h != nil {
		s.WriteHandle = &wire.BidiWriteHandle{Handle: h}
	}
	m.FirstMessage = &wire.BidiWriteObjectRequest_AppendObjectSpec{AppendObjectSpec: s}
	return m
}

// appendFinish finalizes at off with the CRC32C of whole.
func appendFinish(off int, whole []byte) *wire.BidiWriteObjectRequest {
	crc := sinkCRC(whole)
	return &wire.BidiWriteObjectRequest{WriteOffset: int64(off), FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc}}
}

func withFlush(m *wire.BidiWriteObjectRequest, lookup bool) *wire.BidiWriteObjectRequest {
	m.Flush, m.StateLookup = true, lookup
	return m
}

// appendStream is one BidiWriteObject stream, driven message by message.
type appendStream struct {
	t  *testing.T
	st grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]
}

func openStream(t *testing.T, ctx context.Context, cc *grpc.ClientConn) *appendStream {
	st, err := wire.NewBidiWriteObjectStream(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	return &appendStream{t, st}
}

func (a *appendStream) send(m *wire.BidiWriteObjectRequest) { a.st.Send(m) }

func (a *appendStream) must() *wire.BidiWriteObjectResponse {
	a.t.Helper()
	r, err := a.st.Recv()
	if err != nil {
		a.t.Fatalf("Recv: %v", err)
	}
	return r
}

// persisted checks that r reports the persisted size n of data, its
// CRC32C and a handle, and returns the handle.
func persisted(t *testing.T, r *wire.BidiWriteObjectResponse, data []byte, n int) []byte {
	t.Helper()
	if r.GetPersistedSize() != int64(n) || r.GetPersistedDataChecksums().GetCrc32C() != sinkCRC(data[:n]) || len(r.GetWriteHandle().GetHandle()) == 0 {
		t.Fatalf("response %v; want persisted size %d, its CRC32C and a handle", r, n)
	}
	return r.GetWriteHandle().GetHandle()
}

// TestSinkAppendable checks the sink's appendable writes, as the fake
// makes them: flushes persist, lookups answer with the persisted size, its
// CRC32C and the handle, a broken stream loses what it did not flush, a
// handle resumes, a takeover fences, finish_write finalizes with the
// CRC32C checked, and a zonal bucket refuses other writes.
func TestSinkAppendable(t *testing.T) {
	const k = 1 << 10
	data := sinkData(8*k, 7)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context)
	}{
		{"flush, lookup, finish", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openStream(t, ctx, cc)
			a.send(appendCreate("obj", appendMsg(0, data[:k])))
			first := a.must()
			if res := first.GetResource(); res.GetGeneration() == 0 || res.GetSize() != 0 || res.GetFinalizeTime() != nil || len(first.GetWriteHandle().GetHandle()) == 0 {
				t.Fatalf("first response %v; want the empty unfinalized object and a handle", first)
			}
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: k, StateLookup: true})
			persisted(t, a.must(), data, 0)
			a.send(withFlush(appendMsg(k, data[k:3*k]), true))
			persisted(t, a.must(), data, 3*k)
			a.send(appendMsg(3*k, data[3*k:]))
			a.send(appendFinish(len(data), data))
			res := a.must().GetResource()
			if res.GetSize() != int64(len(data)) || res.GetFinalizeTime() == nil || res.GetChecksums().GetCrc32C() != sinkCRC(data) || res.GetChecksums().GetMd5Hash() != nil {
				t.Fatalf("finalized %v", res)
			}
			if st := s.Stats(); st.Objects != 1 || st.Bytes != int64(len(data)) {
				t.Fatalf("stats %+v", st)
			}
		}},
		{"a broken stream loses what it did not flush; the handle resumes", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			sctx, cancel := context.WithCancel(ctx)
			a := openStream(t, sctx, cc)
			a.send(appendCreate("obj", withFlush(appendMsg(0, data[:2*k]), false)))
			first := a.must()
			gen, h := first.GetResource().GetGeneration(), first.GetWriteHandle().GetHandle()
			a.send(appendMsg(2*k, data[2*k:4*k]))
			a.send(&wire.BidiWriteObjectRequest{WriteOffset: 4 * k, StateLookup: true})
			persisted(t, a.must(), data, 2*k)
			cancel()
			b := openStream(t, ctx, cc)
			b.send(appendReopen("obj", gen, h, withFlush(appendMsg(k, data[k:5*k]), true))) // resends 1 KiB persisted
			if got := persisted(t, b.must(), data, 5*k); string(got) != string(h) {
				t.Fatalf("handle %q, want %q", got, h)
			}
			b.send(appendMsg(5*k, data[5*k:]))
			b.st.CloseSend()
			persisted(t, b.must(), data, len(data)) // a half-close persists
			out, err := sendBidi(ctx, cc, appendReopen("obj", gen, h, appendFinish(len(data), data)))
			if err != nil || len(out) != 1 || out[0].GetResource().GetSize() != int64(len(data)) {
				t.Fatalf("finish: %v, %v", out, err)
			}
			out, err = sendBidi(ctx, cc, appendReopen("obj", gen, h, appendFinish(len(data), data)))
			if err != nil || len(out) != 1 || out[0].GetResource().GetFinalizeTime() == nil {
				t.Fatalf("retried finish: %v, %v", out, err)
			}
		}},
		{"a takeover fences the writer before", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			a := openStream(t, ctx, cc)
			a.send(appendCreate("obj", withFlush(appendMsg(0, data[:k]), false)))
			first := a.must()
			gen, ha := first.GetResource().GetGeneration(), first.GetWriteHandle().GetHandle()
			a.send(appendMsg(k, data[k:2*k]))
			b := openStream(t, ctx, cc)
			b.send(appendReopen("obj", 0, nil, &wire.BidiWriteObjectRequest{}))
			r := b.must()
			if r.GetResource().GetSize() != k || r.GetResource().GetGeneration() != gen || string(r.GetWriteHandle().GetHandle()) == string(ha) {
				t.Fatalf("takeover: %v; want the 1 KiB persisted and a new handle", r)
			}
			a.send(withFlush(&wire.BidiWriteObjectRequest{WriteOffset: 2 * k}, true))
			if _, err := a.st.Recv(); status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("the writer before: %v, want FailedPrecondition", err)
			}
			_, err := sendBidi(ctx, cc, appendReopen("obj", gen, ha, &wire.BidiWriteObjectRequest{StateLookup: true}))
			wantStatus(t, err, codes.FailedPrecondition, "taken over")
		}},
		{"finish_write alone creates an empty object", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			out, err := sendBidi(ctx, cc, appendCreate("empty", &wire.BidiWriteObjectRequest{FinishWrite: true}))
			if err != nil || len(out) != 1 || out[0].GetResource().GetSize() != 0 || out[0].GetResource().GetFinalizeTime() == nil {
				t.Fatalf("empty: %v, %v", out, err)
			}
		}},
		{"rejects", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			if _, err := sendBidi(ctx, cc, appendCreate("open", appendMsg(0, data[:k]))); err != nil {
				t.Fatal(err)
			}
			bad := appendFinish(k, data[:k+1])
			md5 := appendFinish(k, data[:k])
			md5.ObjectChecksums.Md5Hash = make([]byte, 16)
			sums := appendCreate("x", appendMsg(0, data[:k]))
			sums.ObjectChecksums = appendFinish(k, data[:k]).ObjectChecksums
			for _, tc := range []struct {
				name string
				msgs []*wire.BidiWriteObjectRequest
				code codes.Code
				msg  string
			}{
				{"a wrong CRC32C", []*wire.BidiWriteObjectRequest{appendReopen("open", 0, nil, bad)}, codes.InvalidArgument, "CRC32C mismatch"},
				{"an MD5", []*wire.BidiWriteObjectRequest{appendReopen("open", 0, nil, md5)}, codes.InvalidArgument, "no MD5"},
				{"checksums before finish_write", []*wire.BidiWriteObjectRequest{sums}, codes.InvalidArgument, "finish_write"},
				{"a gap", []*wire.BidiWriteObjectRequest{appendReopen("open", 0, nil, appendMsg(k+1, data[:k]))}, codes.InvalidArgument, "gap"},
				{"a handle it did not issue", []*wire.BidiWriteObjectRequest{appendReopen("open", 0, []byte("x"), appendMsg(k, data[:k]))}, codes.InvalidArgument, "write_handle"},
				{"no object", []*wire.BidiWriteObjectRequest{appendReopen("missing", 0, nil, appendMsg(0, data[:k]))}, codes.NotFound, "not found"},
				{"an overwrite that is not appendable", func() []*wire.BidiWriteObjectRequest {
					m := sinkMsgs(data[:k], k)
					m[0].FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("open")}
					return m
				}(), codes.FailedPrecondition, "unfinalized"},
			} {
				_, err := sendBidi(ctx, cc, tc.msgs...)
				if status.Code(err) != tc.code {
					t.Fatalf("%s: %v, want %v", tc.name, err, tc.code)
				}
				wantStatus(t, err, tc.code, tc.msg)
			}
		}},
		{"a zonal bucket takes appendable writes only", func(t *testing.T, s *Server, cc *grpc.ClientConn, ctx context.Context) {
			zonal := func(m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
				m.GetWriteObjectSpec().Resource.Bucket = api.BucketPrefix + "zone-bucket"
				return m
			}
			out, err := sendBidi(ctx, cc, zonal(appendCreate("z", appendFinish(0, nil))))
			if err != nil || out[0].GetResource().GetStorageClass() != "RAPID" {
				t.Fatalf("appendable write: %v, %v", out, err)
			}
			m := sinkMsgs(data[:k], k)
			m[0].FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("z")}
			_, err = sendBidi(ctx, cc, zonal(m[0]))
			wantStatus(t, err, codes.InvalidArgument, "zonal")
			_, err = sendWrite(ctx, cc, asWrite([]*wire.BidiWriteObjectRequest{m[0]})...)
			wantStatus(t, err, codes.InvalidArgument, "zonal")
			err = cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: m[0].GetWriteObjectSpec()}, &wire.StartResumableWriteResponse{})
			wantStatus(t, err, codes.InvalidArgument, "zonal")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewTest(t, WithZonalBucket("zone-bucket"))
			tc.run(t, s, sinkDial(t, s), sinkCtx(t))
		})
	}
}

// TestSinkAppendableOfficialClient writes appendable objects into the
// sink with the official client's gRPC writer: finalized on close, and
// flushed, left unfinalized and taken over.
func TestSinkAppendableOfficialClient(t *testing.T) {
	s := NewTest(t)
	_, official := sinkClients(t, s)
	data := sinkData(5<<20+3, 8)
	o := official.Bucket(sinkBucket).Object("a")
	w := o.NewWriter(sinkCtx(t))
	w.Append, w.ChunkSize = true, 2<<20
	if _, err := w.Write(data[:3<<20]); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Flush(); err != nil || n != 3<<20 {
		t.Fatalf("Flush: %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gen := w.Attrs().Generation
	w2, off, err := o.Generation(gen).NewWriterFromAppendableObject(sinkCtx(t), nil)
	if err != nil || off != 3<<20 {
		t.Fatalf("takeover: offset %d, %v", off, err)
	}
	if _, err := w2.Write(data[3<<20:]); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	w3, off, err := o.Generation(gen).NewWriterFromAppendableObject(sinkCtx(t), &storage.AppendableWriterOpts{FinalizeOnClose: true})
	if err != nil || off != int64(len(data)) {
		t.Fatalf("second takeover: offset %d, %v", off, err)
	}
	if err := w3.Close(); err != nil {
		t.Fatal(err)
	}
	if a := w3.Attrs(); a == nil || a.Size != int64(len(data)) || a.CRC32C != sinkCRC(data) || a.Finalized.IsZero() {
		t.Fatalf("attrs %+v", a)
	}
}
