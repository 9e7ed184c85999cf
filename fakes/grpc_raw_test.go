package fakes_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// officialBidi returns the official client over gRPC with bidirectional
// reads (BidiReadObject), closed when the test ends.
func officialBidi(t *testing.T, srv *fakes.Server) *storage.Client {
	t.Helper()
	c, err := storage.NewGRPCClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics(),
		storage.WithGRPCBidiReads(),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBidiReadObject reads through the official client's BidiReadObject
// reader and its multi-range downloader.
func TestBidiReadObject(t *testing.T) {
	srv, cc := start(t)
	big := payload(5*mib+3, 70)
	put(t, cc, "big", big)
	put(t, cc, "empty", nil)
	c := officialBidi(t, srv)
	b := c.Bucket(bucket)
	for _, tc := range []struct {
		name          string
		object        string
		offset, lengt int64
		want          []byte
	}{
		{"whole", "big", 0, -1, big},
		{"across messages", "big", 2*mib - 10, 2*mib + 20, big[2*mib-10 : 4*mib+10]},
		{"to the end", "big", 5 * mib, -1, big[5*mib:]},
		{"last bytes", "big", -100, -1, big[len(big)-100:]},
		{"empty object", "empty", 0, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := b.Object(tc.object).NewRangeReader(ctxT(t), tc.offset, tc.lengt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, tc.name, got, tc.want)
		})
	}
	t.Run("missing", func(t *testing.T) {
		if _, err := b.Object("missing").NewReader(ctxT(t)); !errors.Is(err, storage.ErrObjectNotExist) {
			t.Fatalf("got %v, want ErrObjectNotExist", err)
		}
	})
	t.Run("multi-range", func(t *testing.T) {
		mrd, err := b.Object("big").NewMultiRangeDownloader(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		ranges := [][2]int64{{0, 10}, {3 * mib, mib}, {mib - 5, 2*mib + 7}, {int64(len(big)) - 1, 1}}
		bufs := make([]bytes.Buffer, len(ranges))
		errs := make([]error, len(ranges))
		var mu sync.Mutex
		for i, rg := range ranges {
			mrd.Add(&bufs[i], rg[0], rg[1], func(_, _ int64, err error) {
				mu.Lock()
				errs[i] = err
				mu.Unlock()
			})
		}
		var outside error
		mrd.Add(io.Discard, int64(len(big))+10, 5, func(_, _ int64, err error) { outside = err })
		mrd.Wait()
		for i, rg := range ranges {
			if errs[i] != nil {
				t.Fatalf("range %v: %v", rg, errs[i])
			}
			sameBytes(t, "range", bufs[i].Bytes(), big[rg[0]:rg[0]+rg[1]])
		}
		if status.Code(outside) != codes.OutOfRange {
			t.Fatalf("range past the end: %v, want OutOfRange", outside)
		}
		mrd.Close()
	})
}

// bidiReadMsg encodes a BidiReadObjectRequest: a read_object_spec with
// bucket, object, generation and read handle when spec is set, and
// read_ranges of {offset, length, id}.
func bidiReadMsg(spec bool, object string, gen int64, handle []byte, ranges ...[3]int64) []byte {
	var b []byte
	if spec {
		var s []byte
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendString(s, bucketRes)
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendString(s, object)
		if gen != 0 {
			s = protowire.AppendTag(s, 3, protowire.VarintType)
			s = protowire.AppendVarint(s, uint64(gen))
		}
		if handle != nil {
			var h []byte
			h = protowire.AppendTag(h, 1, protowire.BytesType)
			h = protowire.AppendBytes(h, handle)
			s = protowire.AppendTag(s, 13, protowire.BytesType)
			s = protowire.AppendBytes(s, h)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, s)
	}
	for _, r := range ranges {
		var rb []byte
		for i, v := range r {
			rb = protowire.AppendTag(rb, protowire.Number(i+1), protowire.VarintType)
			rb = protowire.AppendVarint(rb, uint64(v))
		}
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, rb)
	}
	return b
}

// bidiReadResp is a decoded BidiReadObjectResponse.
type bidiReadResp struct {
	meta    *wire.Object
	handle  []byte
	content []byte
	ids     []int64
	ends    int
}

func decodeBidiRead(t *testing.T, b []byte) bidiReadResp {
	t.Helper()
	var out bidiReadResp
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if typ != protowire.BytesType {
			t.Fatalf("field %d has type %d", num, typ)
		}
		v, n := protowire.ConsumeBytes(b)
		b = b[n:]
		switch num {
		case 4:
			out.meta = &wire.Object{}
			if err := proto.Unmarshal(v, out.meta); err != nil {
				t.Fatal(err)
			}
		case 7:
			_, _, n := protowire.ConsumeTag(v)
			out.handle, _ = protowire.ConsumeBytes(v[n:])
		case 6:
			for len(v) > 0 {
				num, typ, n := protowire.ConsumeTag(v)
				v = v[n:]
				switch {
				case num == 1: // checksummed_data
					cd, n := protowire.ConsumeBytes(v)
					v = v[n:]
					_, _, n = protowire.ConsumeTag(cd)
					c, _ := protowire.ConsumeBytes(cd[n:])
					out.content = append(out.content, c...)
				case num == 2: // read_range
					rr, n := protowire.ConsumeBytes(v)
					v = v[n:]
					for len(rr) > 0 {
						f, _, n := protowire.ConsumeTag(rr)
						x, m := protowire.ConsumeVarint(rr[n:])
						rr = rr[n+m:]
						if f == 3 {
							out.ids = append(out.ids, int64(x))
						}
					}
				case num == 3 && typ == protowire.VarintType:
					x, n := protowire.ConsumeVarint(v)
					v = v[n:]
					if x == 1 {
						out.ends++
					}
				default:
					t.Fatalf("unexpected ObjectRangeData field %d", num)
				}
			}
		}
	}
	return out
}

// rawBidiRead opens a BidiReadObject stream.
func rawBidiRead(t *testing.T, ctx context.Context, cc *grpc.ClientConn) grpc.ClientStream {
	t.Helper()
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/google.storage.v2.Storage/BidiReadObject")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sendRaw(st grpc.ClientStream, b []byte) error {
	m := &emptypb.Empty{}
	m.ProtoReflect().SetUnknown(b)
	return st.SendMsg(m)
}

func recvRaw(st grpc.ClientStream) ([]byte, error) {
	var m emptypb.Empty
	if err := st.RecvMsg(&m); err != nil {
		return nil, err
	}
	return m.ProtoReflect().GetUnknown(), nil
}

// TestBidiReadObjectRaw covers what the official client does not show:
// the stream's protocol errors, ranges sent after the first message, and
// the read handle that pins the generation.
func TestBidiReadObjectRaw(t *testing.T) {
	_, cc := start(t)
	v1, v2 := []byte("first version"), []byte("second version")
	put(t, cc, "obj", v1)
	t.Run("first message without spec", func(t *testing.T) {
		st := rawBidiRead(t, ctxT(t), cc)
		sendRaw(st, bidiReadMsg(false, "", 0, nil, [3]int64{0, 0, 1}))
		st.CloseSend()
		_, err := recvRaw(st)
		wantCode(t, err, codes.InvalidArgument)
	})
	var handle []byte
	t.Run("ranges in later messages", func(t *testing.T) {
		st := rawBidiRead(t, ctxT(t), cc)
		sendRaw(st, bidiReadMsg(true, "obj", 0, nil))
		b, err := recvRaw(st)
		if err != nil {
			t.Fatal(err)
		}
		first := decodeBidiRead(t, b)
		if first.meta.GetName() != "obj" || first.meta.GetSize() != int64(len(v1)) || len(first.handle) == 0 || first.content != nil {
			t.Fatalf("first response: %+v", first)
		}
		handle = first.handle
		sendRaw(st, bidiReadMsg(false, "", 0, nil, [3]int64{6, 3, 7}, [3]int64{-7, 0, 8}))
		var got []bidiReadResp
		for range 2 {
			b, err := recvRaw(st)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, decodeBidiRead(t, b))
		}
		if string(got[0].content) != "ver" || got[0].ids[0] != 7 || got[0].ends != 1 ||
			string(got[1].content) != "version" || got[1].ids[0] != 8 || got[1].ends != 1 {
			t.Fatalf("responses %+v", got)
		}
		sendRaw(st, bidiReadMsg(true, "obj", 0, nil))
		_, err = recvRaw(st)
		wantCode(t, err, codes.InvalidArgument)
	})
	t.Run("the read handle keeps the generation", func(t *testing.T) {
		// The bucket keeps no versions: the generation the handle names is
		// gone, and a read resumed with it fails rather than mixing versions.
		put(t, cc, "obj", v2)
		st := rawBidiRead(t, ctxT(t), cc)
		sendRaw(st, bidiReadMsg(true, "obj", 0, handle, [3]int64{0, 0, 1}))
		st.CloseSend()
		_, err := recvRaw(st)
		wantCode(t, err, codes.NotFound)
		// Without the handle, the read is of the live generation.
		st = rawBidiRead(t, ctxT(t), cc)
		sendRaw(st, bidiReadMsg(true, "obj", 0, nil, [3]int64{0, 0, 1}))
		st.CloseSend()
		b, err := recvRaw(st)
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeBidiRead(t, b); !bytes.Equal(got.content, v2) {
			t.Fatalf("content %q, want the second version", got.content)
		}
		if _, err := recvRaw(st); !errors.Is(err, io.EOF) {
			t.Fatalf("end of stream: %v", err)
		}
	})
}

// TestUpdateObject updates metadata over gRPC with the official client.
func TestUpdateObject(t *testing.T) {
	srv, cc := start(t)
	put(t, cc, "obj", []byte("content"))
	c := officialBidi(t, srv)
	o := c.Bucket(bucket).Object("obj")
	ct := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	attrs, err := o.If(storage.Conditions{MetagenerationMatch: 1}).Update(ctxT(t), storage.ObjectAttrsToUpdate{
		ContentType:  "text/plain",
		CacheControl: "no-cache",
		CustomTime:   ct,
		Metadata:     map[string]string{"a": "1", "b": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Metageneration != 2 || attrs.ContentType != "text/plain" || attrs.CacheControl != "no-cache" ||
		!attrs.CustomTime.Equal(ct) || attrs.Metadata["a"] != "1" || attrs.Metadata["b"] != "2" {
		t.Fatalf("attrs after the update: %+v", attrs)
	}
	// One key at a time: the others stay.
	if _, err := o.Update(ctxT(t), storage.ObjectAttrsToUpdate{Metadata: map[string]string{"a": "3"}}); err != nil {
		t.Fatal(err)
	}
	stored, err := srv.Object(bucket, "obj")
	if err != nil || stored.Metageneration != 3 || stored.Metadata["a"] != "3" || stored.Metadata["b"] != "2" || string(stored.Content) != "content" {
		t.Fatalf("stored: %+v, %v", stored.ObjectAttrs, err)
	}
	for _, tc := range []struct {
		name string
		o    *storage.ObjectHandle
		u    storage.ObjectAttrsToUpdate
		code codes.Code
	}{
		{"precondition", o.If(storage.Conditions{MetagenerationMatch: 1}), storage.ObjectAttrsToUpdate{ContentType: "x"}, codes.FailedPrecondition},
		{"custom time moved back", o, storage.ObjectAttrsToUpdate{CustomTime: ct.Add(-time.Hour)}, codes.InvalidArgument},
		{"unsupported field", o, storage.ObjectAttrsToUpdate{TemporaryHold: true}, codes.Unimplemented},
		{"missing object", c.Bucket(bucket).Object("missing"), storage.ObjectAttrsToUpdate{ContentType: "x"}, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.Update(ctxT(t), tc.u)
			if status.Code(err) != tc.code && !(tc.code == codes.NotFound && errors.Is(err, storage.ErrObjectNotExist)) {
				t.Fatalf("got %v, want %v", err, tc.code)
			}
		})
	}
	if stored, _ := srv.Object(bucket, "obj"); stored.Metageneration != 3 {
		t.Fatalf("a failed update changed the object: metageneration %d", stored.Metageneration)
	}
}

// TestRawMethodFaults checks that BidiReadObject and UpdateObject go
// through the request log and take fault rules like the other methods.
func TestRawMethodFaults(t *testing.T) {
	srv, cc := start(t, fakes.WithCallLog(10))
	put(t, cc, "obj", []byte("abc"))
	srv.FailCall(fakes.MethodBidiReadObject, 1, codes.PermissionDenied)
	srv.FailCall(fakes.MethodUpdateObject, 1, codes.PermissionDenied)
	srv.ResetCalls()
	// FailCall fails a stream before the server reads it, so the client's
	// first send may see the stream's end (io.EOF) before its status: read
	// the status with a receive, as gRPC says, which the official reader
	// does not do.
	st := rawBidiRead(t, ctxT(t), cc)
	sendRaw(st, bidiReadMsg(true, "obj", 0, nil, [3]int64{0, 0, 1}))
	st.CloseSend()
	if _, err := recvRaw(st); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("BidiReadObject: %v, want PermissionDenied", err)
	}
	o := officialBidi(t, srv).Bucket(bucket).Object("obj")
	if _, err := o.Update(ctxT(t), storage.ObjectAttrsToUpdate{ContentType: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Update: %v, want PermissionDenied", err)
	}
	r, err := o.NewReader(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r)
	r.Close()
	// A stream that fails before it is read names no object.
	var got []string
	for _, c := range srv.Calls() {
		got = append(got, c.Method+" "+c.Object+" "+c.Code.String())
	}
	want := []string{"BidiReadObject  PermissionDenied", "UpdateObject  PermissionDenied", "BidiReadObject obj OK"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("calls %q, want %q", got, want)
	}
}
