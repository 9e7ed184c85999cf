package sink

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

const sinkBucket = "sink-test"

func sinkCRC(b []byte) uint32 { return crc32.Checksum(b, crc32c.Table) }

// sinkData returns n deterministic pseudo-random bytes.
func sinkData(n int, seed byte) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{seed, 11})
	r.Read(b)
	return b
}

func sinkCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sinkDial(t testing.TB, k *Server) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(k.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func sinkSpec(name string) *wire.WriteObjectSpec {
	return &wire.WriteObjectSpec{Resource: &wire.Object{Bucket: api.BucketPrefix + sinkBucket, Name: name, ContentType: "text/plain"}}
}

// sinkMsgs cuts data into BidiWriteObjectRequest messages of at most size
// bytes, each with its CRC32C, the last with finish_write and the
// whole-object CRC32C.
func sinkMsgs(data []byte, size int) []*wire.BidiWriteObjectRequest {
	var msgs []*wire.BidiWriteObjectRequest
	for off := 0; off == 0 || off < len(data); off += size {
		c := data[off:min(off+size, len(data))]
		crc := sinkCRC(c)
		msgs = append(msgs, &wire.BidiWriteObjectRequest{
			WriteOffset: int64(off),
			Data:        &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: c, Crc32C: &crc}},
		})
	}
	last := msgs[len(msgs)-1]
	crc := sinkCRC(data)
	last.FinishWrite, last.ObjectChecksums = true, &wire.ObjectChecksums{Crc32C: &crc}
	return msgs
}

// asWrite converts bidi messages into WriteObject messages.
func asWrite(msgs []*wire.BidiWriteObjectRequest) []*wire.WriteObjectRequest {
	out := make([]*wire.WriteObjectRequest, len(msgs))
	for i, m := range msgs {
		w := &wire.WriteObjectRequest{WriteOffset: m.WriteOffset, ObjectChecksums: m.ObjectChecksums, FinishWrite: m.FinishWrite}
		if cd := m.GetChecksummedData(); cd != nil {
			w.Data = &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: cd}
		}
		switch f := m.FirstMessage.(type) {
		case *wire.BidiWriteObjectRequest_WriteObjectSpec:
			w.FirstMessage = &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: f.WriteObjectSpec}
		case *wire.BidiWriteObjectRequest_UploadId:
			w.FirstMessage = &wire.WriteObjectRequest_UploadId{UploadId: f.UploadId}
		}
		out[i] = w
	}
	return out
}

// sendWrite sends msgs on one WriteObject stream and returns the response.
func sendWrite(ctx context.Context, cc *grpc.ClientConn, msgs ...*wire.WriteObjectRequest) (*wire.WriteObjectResponse, error) {
	st, err := wire.NewWriteObjectStream(ctx, cc)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break // the server ended the stream: CloseAndRecv tells why
		}
	}
	return st.CloseAndRecv()
}

// sendBidi sends msgs on one BidiWriteObject stream, half-closes it and
// returns the responses until the stream ends.
func sendBidi(ctx context.Context, cc *grpc.ClientConn, msgs ...*wire.BidiWriteObjectRequest) ([]*wire.BidiWriteObjectResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := wire.NewBidiWriteObjectStream(ctx, cc)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break
		}
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	var out []*wire.BidiWriteObjectResponse
	for range len(msgs) + 2 {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, fmt.Errorf("more responses than messages")
}

func wantStatus(t *testing.T, err error, want codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != want || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("error %v; want %v with %q", err, want, msg)
	}
}

func startSession(t *testing.T, cc *grpc.ClientConn, s *wire.WriteObjectSpec, sums *wire.ObjectChecksums) string {
	t.Helper()
	var resp wire.StartResumableWriteResponse
	err := cc.Invoke(sinkCtx(t), wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: s, ObjectChecksums: sums}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	return resp.UploadId
}

func queryStatus(ctx context.Context, cc *grpc.ClientConn, id string) (*wire.QueryWriteStatusResponse, error) {
	var resp wire.QueryWriteStatusResponse
	return &resp, cc.Invoke(ctx, wire.MethodQueryWriteStatus, &wire.QueryWriteStatusRequest{UploadId: id}, &resp)
}

// TestSinkClients uploads with objup and with the official client's gRPC
// writer in its modes: every upload succeeds, and the sink reports the
// size and CRC32C that were sent.
// sinkClients returns an objup client and an official gRPC client dialled
// to k, both closed when the test ends.
func sinkClients(t *testing.T, k *Server) (*uploader.Client, *storage.Client) {
	t.Helper()
	dial := []option.ClientOption{
		option.WithEndpoint(k.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	ours, err := uploader.NewClient(context.Background(), dial...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Close() })
	official, err := storage.NewGRPCClient(context.Background(), append(dial, storage.WithDisabledClientMetrics())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { official.Close() })
	return ours, official
}

func TestSinkClients(t *testing.T) {
	k := NewTest(t)
	ctx := sinkCtx(t)
	ours, official := sinkClients(t, k)

	type attrs struct {
		size int64
		crc  uint32
	}
	objup := func(name string, data []byte) (attrs, error) {
		a, err := ours.Upload(ctx, sinkBucket, name, bytes.NewReader(data))
		if err != nil {
			return attrs{}, err
		}
		return attrs{a.Size, a.CRC32C}, nil
	}
	officialWith := func(chunk int) func(string, []byte) (attrs, error) {
		return func(name string, data []byte) (attrs, error) {
			w := official.Bucket(sinkBucket).Object(name).NewWriter(ctx)
			w.ChunkSize = chunk
			if _, err := w.Write(data); err != nil {
				w.Close()
				return attrs{}, err
			}
			if err := w.Close(); err != nil {
				return attrs{}, err
			}
			return attrs{w.Attrs().Size, w.Attrs().CRC32C}, nil
		}
	}
	clients := []struct {
		name string
		up   func(string, []byte) (attrs, error)
	}{
		{"objup", objup},
		{"official-default", officialWith(16 << 20)},
		{"official-256KiB", officialWith(256 << 10)},
		{"official-0", officialWith(0)},
	}
	var objects, total int64
	for _, size := range []int{1 << 10, 4 << 20, 20 << 20} {
		data := sinkData(size, byte(size>>10))
		for _, c := range clients {
			t.Run(fmt.Sprintf("%s/%d", c.name, size), func(t *testing.T) {
				a, err := c.up("obj-"+c.name, data)
				if err != nil {
					t.Fatal(err)
				}
				if a.size != int64(size) || a.crc != sinkCRC(data) {
					t.Errorf("object of %d bytes, CRC32C %#08x; want %d, %#08x", a.size, a.crc, size, sinkCRC(data))
				}
			})
			objects, total = objects+1, total+int64(size)
		}
	}
	st := k.Stats()
	if st.Objects != objects || st.Bytes != total || st.Received != total || st.Failed != 0 {
		t.Errorf("stats %+v; want %d objects of %d bytes in all, all received, none failed", st, objects, total)
	}
}

// TestSinkMD5 checks the MD5 an objup client computes: declared with the
// content of a one-shot upload it is checked; declared at the end of a
// resumable upload it is checked only by a sink that hashes everything.
func TestSinkMD5(t *testing.T) {
	small, large := sinkData(10<<10, 1), sinkData(3<<20, 2)
	tests := []struct {
		name string
		opts []Option
		data []byte
		code codes.Code
	}{
		{"one-shot", nil, small, codes.OK},
		{"resumable", nil, large, codes.Unimplemented},
		{"resumable with WithMD5", []Option{WithMD5()}, large, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := NewTest(t, tt.opts...)
			ctx := sinkCtx(t)
			c, err := uploader.NewClient(ctx, option.WithEndpoint(k.GRPCAddr()), option.WithoutAuthentication(),
				option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			a, err := c.Upload(ctx, sinkBucket, "md5", bytes.NewReader(tt.data), experimental.WithMD5())
			if status.Code(err) != tt.code {
				t.Fatalf("Upload: %v; want %v", err, tt.code)
			}
			if err != nil {
				return
			}
			if sum := md5.Sum(tt.data); !bytes.Equal(a.MD5, sum[:]) {
				t.Errorf("MD5 %x; want %x", a.MD5, sum)
			}
		})
	}
}

// TestSinkResumable follows a session over two streams: state lookups
// answer the persisted size, a half-close keeps the session, the status is
// queried, and the retried finish_write gets the same object.
func TestSinkResumable(t *testing.T) {
	k := NewTest(t)
	cc := sinkDial(t, k)
	ctx := sinkCtx(t)
	data := sinkData(5<<20, 3)
	id := startSession(t, cc, sinkSpec("resumed"), nil)
	msgs := sinkMsgs(data, 2<<20) // 2 MiB, 2 MiB, 1 MiB
	first := sinkClone(msgs[0])
	first.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	first.Flush, first.StateLookup = true, true

	resps, err := sendBidi(ctx, cc, first)
	if err != nil {
		t.Fatal(err)
	}
	// One answer to the state lookup, one to the half-close.
	if len(resps) != 2 || resps[0].GetPersistedSize() != 2<<20 || resps[1].GetPersistedSize() != 2<<20 {
		t.Fatalf("responses %v; want the persisted size twice", resps)
	}
	q, err := queryStatus(ctx, cc, id)
	if err != nil || q.GetPersistedSize() != 2<<20 {
		t.Fatalf("QueryWriteStatus = %v, %v; want 2 MiB persisted", q, err)
	}

	// The rest on a new stream, with the first message resent: an overlap.
	second := sinkClone(msgs[1])
	second.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	overlap := sinkClone(msgs[0])
	overlap.FirstMessage = second.FirstMessage
	_, err = sendBidi(ctx, cc, overlap)
	wantStatus(t, err, codes.InvalidArgument, "overlaps")
	resps, err = sendBidi(ctx, cc, second, msgs[2])
	if err != nil {
		t.Fatal(err)
	}
	obj := resps[len(resps)-1].GetResource()
	if obj.GetSize() != int64(len(data)) || obj.GetChecksums().GetCrc32C() != sinkCRC(data) ||
		obj.GetName() != "resumed" || obj.GetBucket() != api.BucketPrefix+sinkBucket || obj.GetContentType() != "text/plain" ||
		obj.GetGeneration() == 0 || obj.GetMetageneration() != 1 || obj.GetStorageClass() != "STANDARD" {
		t.Fatalf("object %v", obj)
	}
	q, err = queryStatus(ctx, cc, id)
	if err != nil || !proto.Equal(q.GetResource(), obj) {
		t.Fatalf("QueryWriteStatus = %v, %v; want the object", q, err)
	}
	again := &wire.BidiWriteObjectRequest{FirstMessage: second.FirstMessage, WriteOffset: int64(len(data)), FinishWrite: true}
	resps, err = sendBidi(ctx, cc, again)
	if err != nil || len(resps) != 1 || !proto.Equal(resps[0].GetResource(), obj) {
		t.Fatalf("retried finish_write = %v, %v; want the object", resps, err)
	}
	if st := k.Stats(); st.Objects != 1 || st.Bytes != int64(len(data)) || st.Sessions != 1 || st.Received != int64(len(data)) {
		t.Errorf("stats %+v", st)
	}
	_, err = queryStatus(ctx, cc, "no-such-upload")
	wantStatus(t, err, codes.NotFound, "no-such-upload")
}

// TestSinkRejects sends what the service refuses, on both write methods.
func TestSinkRejects(t *testing.T) {
	k := NewTest(t)
	cc := sinkDial(t, k)
	data := sinkData(3<<20, 4)
	ow := func(msgs []*wire.BidiWriteObjectRequest) []*wire.BidiWriteObjectRequest {
		msgs[0].FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("rejected")}
		return msgs
	}
	tests := []struct {
		name string
		msgs func() []*wire.BidiWriteObjectRequest
		code codes.Code
		msg  string
	}{
		{"corrupted content", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			c := bytes.Clone(m[1].GetChecksummedData().Content)
			c[100] ^= 1
			m[1].GetChecksummedData().Content = c
			return m
		}, codes.DataLoss, "CRC32C mismatch in the message at offset 1048576"},
		{"wrong object CRC32C", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			bad := sinkCRC(data) + 1
			m[2].ObjectChecksums.Crc32C = &bad
			return m
		}, codes.DataLoss, "object CRC32C mismatch"},
		{"wrong object MD5", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data[:1000], 1<<20))
			m[0].ObjectChecksums.Md5Hash = make([]byte, 16)
			return m
		}, codes.DataLoss, "object MD5 mismatch"},
		{"gap", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			return append(m[:1], m[2:]...)
		}, codes.InvalidArgument, "write_offset 2097152 leaves a gap: 1048576 bytes"},
		{"overlap", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[1].WriteOffset -= 10
			return m
		}, codes.InvalidArgument, "write_offset 1048566 overlaps"},
		{"finish at the wrong offset", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[2].FinishWrite = false
			return append(m, &wire.BidiWriteObjectRequest{WriteOffset: 5, FinishWrite: true})
		}, codes.InvalidArgument, "finish_write 5 overlaps"},
		{"no finish_write", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[2].FinishWrite = false
			return m
		}, codes.InvalidArgument, "without finish_write"},
		{"message over 2 MiB", func() []*wire.BidiWriteObjectRequest {
			return ow(sinkMsgs(data, 2<<20+1))
		}, codes.InvalidArgument, "exceeds the limit"},
		{"beyond object_size", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[0].GetWriteObjectSpec().ObjectSize = proto.Int64(2 << 20)
			return m
		}, codes.InvalidArgument, "beyond object_size"},
		{"short of object_size", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[0].GetWriteObjectSpec().ObjectSize = proto.Int64(4 << 20)
			return m
		}, codes.InvalidArgument, "object_size is 4194304"},
		{"precondition on an absent object", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data[:10], 1<<20))
			m[0].GetWriteObjectSpec().IfGenerationMatch = proto.Int64(7)
			return m
		}, codes.FailedPrecondition, "does not exist"},
		{"no first message", func() []*wire.BidiWriteObjectRequest {
			return sinkMsgs(data[:10], 1<<20)
		}, codes.InvalidArgument, "first message must set"},
		{"spec twice", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data, 1<<20))
			m[1].FirstMessage = m[0].FirstMessage
			return m
		}, codes.InvalidArgument, "only in the first message"},
		{"bad bucket", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data[:10], 1<<20))
			m[0].GetWriteObjectSpec().Resource.Bucket = api.BucketPrefix + "UPPER"
			return m
		}, codes.InvalidArgument, "UPPER"},
		{"bad object name", func() []*wire.BidiWriteObjectRequest {
			m := ow(sinkMsgs(data[:10], 1<<20))
			m[0].GetWriteObjectSpec().Resource.Name = "a\nb"
			return m
		}, codes.InvalidArgument, "line feed"},
		{"unknown session", func() []*wire.BidiWriteObjectRequest {
			m := sinkMsgs(data[:10], 1<<20)
			m[0].FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: "nope"}
			return m
		}, codes.NotFound, `"nope" not found`},
	}
	for _, tt := range tests {
		t.Run("bidi/"+tt.name, func(t *testing.T) {
			_, err := sendBidi(sinkCtx(t), cc, tt.msgs()...)
			wantStatus(t, err, tt.code, tt.msg)
		})
		t.Run("write/"+tt.name, func(t *testing.T) {
			_, err := sendWrite(sinkCtx(t), cc, asWrite(tt.msgs())...)
			wantStatus(t, err, tt.code, tt.msg)
		})
	}
	if st := k.Stats(); st.Objects != 0 || st.Failed != int64(2*len(tests)) {
		t.Errorf("stats %+v; want nothing stored, %d failed calls", st, 2*len(tests))
	}
}

// TestSinkSessionRejects checks what a resumable session refuses, and that a
// failed finish drops it.
func TestSinkSessionRejects(t *testing.T) {
	k := NewTest(t)
	cc := sinkDial(t, k)
	ctx := sinkCtx(t)
	data := sinkData(3<<20, 5)
	withID := func(id string, m *wire.BidiWriteObjectRequest) *wire.BidiWriteObjectRequest {
		m = sinkClone(m)
		m.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
		return m
	}

	// An MD5 declared at the end, after content the sink did not hash.
	id := startSession(t, cc, sinkSpec("late-md5"), nil)
	msgs := sinkMsgs(data, 2<<20)
	sum := md5.Sum(data)
	msgs[1].ObjectChecksums.Md5Hash = sum[:]
	_, err := sendBidi(ctx, cc, withID(id, msgs[0]), msgs[1])
	wantStatus(t, err, codes.Unimplemented, "after 2097152 bytes")

	// Declared when the session starts, it is checked.
	id = startSession(t, cc, sinkSpec("early-md5"), &wire.ObjectChecksums{Md5Hash: sum[:]})
	resps, err := sendBidi(ctx, cc, withID(id, msgs[0]), msgs[1])
	if err != nil || !bytes.Equal(resps[0].GetResource().GetChecksums().GetMd5Hash(), sum[:]) {
		t.Fatalf("early MD5: %v, %v", resps, err)
	}

	// A wrong whole-object CRC32C fails the finish and drops the session.
	id = startSession(t, cc, sinkSpec("bad-crc"), nil)
	bad := sinkClone(msgs[1])
	bad.ObjectChecksums = &wire.ObjectChecksums{Crc32C: proto.Uint32(1)}
	_, err = sendBidi(ctx, cc, withID(id, msgs[0]), bad)
	wantStatus(t, err, codes.DataLoss, "object CRC32C mismatch")
	_, err = queryStatus(ctx, cc, id)
	wantStatus(t, err, codes.NotFound, id)

	// The sink serves the write methods only.
	var obj wire.Object
	err = cc.Invoke(ctx, wire.MethodGetObject, &wire.GetObjectRequest{Bucket: api.BucketPrefix + sinkBucket, Object: "early-md5"}, &obj)
	wantStatus(t, err, codes.Unimplemented, "GetObject")
}

// TestSinkDecode checks the view decoder against the proto decoder on
// messages split into received buffers at every size, including encodings
// it leaves to the proto decoder.
func TestSinkDecode(t *testing.T) {
	content := sinkData(70000, 6)
	crc := sinkCRC(content)
	full := &wire.BidiWriteObjectRequest{
		FirstMessage:    &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("decoded")},
		WriteOffset:     1 << 40,
		Data:            &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: content, Crc32C: &crc}},
		ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc, Md5Hash: []byte("0123456789abcdef")},
		Flush:           true,
		StateLookup:     true,
		FinishWrite:     true,
	}
	enc, err := proto.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	// The same message with checksummed_data given twice (the second one
	// merges into the first) and an unknown field inside it.
	twice := protowire.AppendTag(bytes.Clone(enc), sinkFieldData, protowire.BytesType)
	twice = protowire.AppendBytes(twice, protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1))
	noCRC := proto.Clone(full).(*wire.BidiWriteObjectRequest)
	noCRC.GetChecksummedData().Crc32C = nil
	empty := proto.Clone(full).(*wire.BidiWriteObjectRequest)
	empty.GetChecksummedData().Content = nil
	noData := proto.Clone(full).(*wire.BidiWriteObjectRequest)
	noData.Data = nil
	messages := map[string][]byte{"full": enc, "twice": twice}
	for name, m := range map[string]*wire.BidiWriteObjectRequest{"no crc": noCRC, "empty content": empty, "no data": noData} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		messages[name] = b
	}
	for name, enc := range messages {
		var want sinkMsg
		want.bidi = true
		if err := want.decodeCopy(mem.BufferSlice{mem.SliceBuffer(enc)}); err != nil {
			t.Fatal(err)
		}
		wantContent := want.bytes()
		for _, split := range []int{1, 2, 3, 7, 100, 16 << 10, len(enc)} {
			t.Run(fmt.Sprintf("%s/split=%d", name, split), func(t *testing.T) {
				var bs mem.BufferSlice
				for off := 0; off < len(enc); off += split {
					bs = append(bs, mem.SliceBuffer(enc[off:min(off+split, len(enc))]))
				}
				got := sinkMsg{bidi: true}
				if err := got.decode(bs); err != nil {
					t.Fatal(err)
				}
				defer got.release()
				if !proto.Equal(&got.bidiReq, &want.bidiReq) || got.hasData != want.hasData || got.hasCRC != want.hasCRC ||
					got.sentCRC != want.sentCRC || !bytes.Equal(got.bytes(), wantContent) {
					t.Errorf("decoded %v, data %v, crc %v %#x, %d bytes; want %v, %v, %v %#x, %d bytes",
						&got.bidiReq, got.hasData, got.hasCRC, got.sentCRC, got.n, &want.bidiReq, want.hasData, want.hasCRC, want.sentCRC, want.n)
				}
			})
		}
	}
	// A message cut short fails where the proto decoder fails: inside a
	// field (a cut between fields is a shorter valid message).
	for n := range len(enc) {
		if n > 200 && n < len(enc)-10 {
			continue
		}
		cut := enc[:n]
		var bs mem.BufferSlice
		for off := 0; off < n; off += 3 {
			bs = append(bs, mem.SliceBuffer(cut[off:min(off+3, n)]))
		}
		want := sinkMsg{bidi: true}
		wantErr := want.decodeCopy(mem.BufferSlice{mem.SliceBuffer(cut)})
		got := sinkMsg{bidi: true}
		if err := got.decode(bs); (err == nil) != (wantErr == nil) {
			t.Errorf("%d of %d bytes: view decoder %v, proto decoder %v", n, len(enc), err, wantErr)
		}
		got.release()
	}
}

// bytes returns a copy of the message's content.
func (m *sinkMsg) bytes() []byte {
	var b []byte
	m.content(func(p []byte) { b = append(b, p...) })
	return b
}

// FuzzSinkDecode checks that the view decoder accepts what the proto
// decoder accepts, with the same fields and content.
func FuzzSinkDecode(f *testing.F) {
	crc := uint32(5)
	for _, m := range []*wire.BidiWriteObjectRequest{
		{WriteOffset: 3, Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: []byte("hello"), Crc32C: &crc}}},
		{FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "u"}, FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc}},
		{FirstMessage: &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("x")}, Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{}}},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b, 3)
	}
	f.Fuzz(func(t *testing.T, enc []byte, split int) {
		split = max(1, split%64)
		var bs mem.BufferSlice
		for off := 0; off < len(enc); off += split {
			bs = append(bs, mem.SliceBuffer(enc[off:min(off+split, len(enc))]))
		}
		want := sinkMsg{bidi: true}
		wantErr := want.decodeCopy(mem.BufferSlice{mem.SliceBuffer(enc)})
		got := sinkMsg{bidi: true}
		gotErr := got.decode(bs)
		defer got.release()
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("view decoder: %v; proto decoder: %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if !proto.Equal(&got.bidiReq, &want.bidiReq) || got.hasData != want.hasData || got.hasCRC != want.hasCRC ||
			got.sentCRC != want.sentCRC || !bytes.Equal(got.bytes(), want.bytes()) {
			t.Fatalf("view decoded %v (data %v, crc %v %#x, %q); proto decoded %v (%v, %v %#x, %q)",
				&got.bidiReq, got.hasData, got.hasCRC, got.sentCRC, got.bytes(), &want.bidiReq, want.hasData, want.hasCRC, want.sentCRC, want.bytes())
		}
	})
}

// BenchmarkSinkWrite measures the sink's own cost of receiving a 64 MiB
// object in 2 MiB messages on one BidiWriteObject stream, and a 1 KiB
// one-shot WriteObject: the client sends messages encoded before the
// benchmark, so the figures are nearly all the sink's. decode=copy decodes
// as grpc-go's proto codec does, the baseline of the sink's view decoder.
func BenchmarkSinkWrite(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 20} {
		data := sinkData(size, 7)
		for _, decode := range []string{"copy", "view"} {
			b.Run(fmt.Sprintf("size=%s/decode=%s", sizeName(size), decode), func(b *testing.B) {
				var opts []Option
				if decode == "copy" {
					opts = append(opts, optionFunc(func(c *config) { c.copyDecode = true }))
				}
				k := NewTest(b, opts...)
				cc := sinkDial(b, k)
				ctx := sinkCtx(b)
				msgs := sinkMsgs(data, 2<<20)
				msgs[0].FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec("bench")}
				enc := make([][]byte, len(msgs))
				for i, m := range msgs {
					enc[i], _ = proto.Marshal(m)
				}
				raw := grpc.ForceCodecV2(preEncoded{})
				b.SetBytes(int64(size))
				b.ReportAllocs()
				start := processCPU()
				for b.Loop() {
					if err := sendEncoded(ctx, cc, enc, raw); err != nil {
						b.Fatal(err)
					}
				}
				cpu := processCPU() - start
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				if size >= 1<<20 {
					b.ReportMetric(cpu.Seconds()/(float64(size)*float64(b.N)/(1<<30)), "cpu-s/GiB")
				}
			})
		}
	}
}

// processCPU returns the CPU time of this process so far (user and system,
// all threads).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// sendEncoded sends pre-encoded messages on one BidiWriteObject stream and
// waits for the object.
func sendEncoded(ctx context.Context, cc *grpc.ClientConn, enc [][]byte, codec grpc.CallOption) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := cc.NewStream(ctx, &wire.BidiWriteObjectStream, wire.MethodBidiWriteObject, codec)
	if err != nil {
		return err
	}
	for i := range enc {
		if err := s.SendMsg(&enc[i]); err != nil {
			return err
		}
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	var resp wire.BidiWriteObjectResponse
	if err := s.RecvMsg(&resp); err != nil {
		return err
	}
	if resp.GetResource() == nil {
		return fmt.Errorf("no object in %v", &resp)
	}
	return nil
}

// preEncoded sends a *[]byte as it is; replies decode as protos.
type preEncoded struct{}

func (preEncoded) Name() string { return "proto" }
func (preEncoded) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(*[]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
	}
	return protoCodec.Marshal(v)
}
func (preEncoded) Unmarshal(data mem.BufferSlice, v any) error { return protoCodec.Unmarshal(data, v) }

func sinkClone[M proto.Message](m M) M { return proto.Clone(m).(M) }
