package fakes_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Started by an init function of go.opencensus.io, which
		// fake-gcs-server links in through cloud.google.com/go/storage;
		// it lives as long as the process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

const (
	bucket    = "fake-test"
	bucketRes = "projects/_/buckets/" + bucket
	mib       = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// payload returns n deterministic pseudo-random bytes.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{seed, 7})
	r.Read(b)
	return b
}

// ctxT returns a context that ends with the test or after 30 s.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start returns a server with the test bucket and a client connection to it.
func start(t *testing.T, opts ...fakes.Option) (*fakes.Server, *grpc.ClientConn) {
	t.Helper()
	srv := fakes.NewTest(t, append([]fakes.Option{fakes.WithBucket(bucket)}, opts...)...)
	return srv, dial(t, srv)
}

func dial(t *testing.T, srv *fakes.Server) *grpc.ClientConn { return dialB(t, srv) }

func dialB(t testing.TB, srv *fakes.Server) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func spec(name string) *wire.WriteObjectSpec {
	return &wire.WriteObjectSpec{Resource: &wire.Object{Bucket: bucketRes, Name: name}}
}

// chunks cuts data into WriteObjectRequest messages of at most size bytes,
// each with its CRC32C, the first with first (spec or upload ID) and the
// last with finish_write and the whole-object CRC32C and MD5.
func chunks(data []byte, size int, first func(*wire.WriteObjectRequest)) []*wire.WriteObjectRequest {
	var msgs []*wire.WriteObjectRequest
	for off := 0; off == 0 || off < len(data); off += size {
		c := data[off:min(off+size, len(data))]
		crc := crcOf(c)
		msgs = append(msgs, &wire.WriteObjectRequest{
			WriteOffset: int64(off),
			Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: c, Crc32C: &crc}},
		})
	}
	if first != nil {
		first(msgs[0])
	}
	last := msgs[len(msgs)-1]
	last.FinishWrite = true
	crc, sum := crcOf(data), md5.Sum(data)
	last.ObjectChecksums = &wire.ObjectChecksums{Crc32C: &crc, Md5Hash: sum[:]}
	return msgs
}

func withSpec(s *wire.WriteObjectSpec) func(*wire.WriteObjectRequest) {
	return func(r *wire.WriteObjectRequest) {
		r.FirstMessage = &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: s}
	}
}

func withUpload(id string) func(*wire.WriteObjectRequest) {
	return func(r *wire.WriteObjectRequest) { r.FirstMessage = &wire.WriteObjectRequest_UploadId{UploadId: id} }
}

// writeObject sends msgs on one WriteObject stream and returns the response.
func writeObject(ctx context.Context, cc *grpc.ClientConn, msgs ...*wire.WriteObjectRequest) (*wire.WriteObjectResponse, error) {
	st, err := wire.NewWriteObjectStream(ctx, cc)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break // the server ended the stream; CloseAndRecv has its status
		}
	}
	return st.CloseAndRecv()
}

// put writes data as name in one WriteObject call, in 2 MiB messages.
func put(t *testing.T, cc *grpc.ClientConn, name string, data []byte) *wire.Object {
	t.Helper()
	resp, err := writeObject(ctxT(t), cc, chunks(data, 2*mib, withSpec(spec(name)))...)
	if err != nil {
		t.Fatalf("WriteObject %s: %v", name, err)
	}
	return resp.GetResource()
}

// bidiChunks is chunks for BidiWriteObject.
func bidiChunks(data []byte, size int, first func(*wire.BidiWriteObjectRequest)) []*wire.BidiWriteObjectRequest {
	var out []*wire.BidiWriteObjectRequest
	for _, m := range chunks(data, size, nil) {
		out = append(out, &wire.BidiWriteObjectRequest{
			WriteOffset:     m.WriteOffset,
			Data:            &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: m.GetChecksummedData()},
			FinishWrite:     m.FinishWrite,
			ObjectChecksums: m.ObjectChecksums,
		})
	}
	if first != nil {
		first(out[0])
	}
	return out
}

func bidiSpec(s *wire.WriteObjectSpec) func(*wire.BidiWriteObjectRequest) {
	return func(r *wire.BidiWriteObjectRequest) {
		r.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: s}
	}
}

func bidiUpload(id string) func(*wire.BidiWriteObjectRequest) {
	return func(r *wire.BidiWriteObjectRequest) {
		r.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	}
}

// bidi sends msgs on one BidiWriteObject stream, half-closes it, and returns
// every response and the stream's final status (nil for OK).
func bidi(ctx context.Context, cc *grpc.ClientConn, msgs ...*wire.BidiWriteObjectRequest) ([]*wire.BidiWriteObjectResponse, error) {
	st, err := wire.NewBidiWriteObjectStream(ctx, cc)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break
		}
	}
	st.CloseSend()
	var out []*wire.BidiWriteObjectResponse
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

func startResumable(t *testing.T, cc *grpc.ClientConn, s *wire.WriteObjectSpec) string {
	t.Helper()
	var resp wire.StartResumableWriteResponse
	if err := cc.Invoke(ctxT(t), wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: s}, &resp); err != nil {
		t.Fatalf("StartResumableWrite: %v", err)
	}
	if resp.GetUploadId() == "" {
		t.Fatal("StartResumableWrite: empty upload_id")
	}
	return resp.GetUploadId()
}

func queryWriteStatus(ctx context.Context, cc *grpc.ClientConn, id string) (*wire.QueryWriteStatusResponse, error) {
	var resp wire.QueryWriteStatusResponse
	err := cc.Invoke(ctx, wire.MethodQueryWriteStatus, &wire.QueryWriteStatusRequest{UploadId: id}, &resp)
	return &resp, err
}

func getObject(ctx context.Context, cc *grpc.ClientConn, req *wire.GetObjectRequest) (*wire.Object, error) {
	var obj wire.Object
	if err := cc.Invoke(ctx, wire.MethodGetObject, req, &obj); err != nil {
		return nil, err
	}
	return &obj, nil
}

// readObject runs ReadObject and returns its messages and the content.
func readObject(ctx context.Context, cc *grpc.ClientConn, req *wire.ReadObjectRequest) ([]*wire.ReadObjectResponse, []byte, error) {
	st, err := cc.NewStream(ctx, &wire.ReadObjectStream, wire.MethodReadObject)
	if err != nil {
		return nil, nil, err
	}
	if err := st.SendMsg(req); err != nil {
		return nil, nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, nil, err
	}
	var (
		msgs []*wire.ReadObjectResponse
		data []byte
	)
	for {
		m := new(wire.ReadObjectResponse)
		err := st.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			return msgs, data, nil
		}
		if err != nil {
			return msgs, data, err
		}
		msgs = append(msgs, m)
		data = append(data, m.GetChecksummedData().GetContent()...)
	}
}

// get reads name whole over gRPC.
func get(t *testing.T, cc *grpc.ClientConn, name string) []byte {
	t.Helper()
	_, data, err := readObject(ctxT(t), cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: name})
	if err != nil {
		t.Fatalf("ReadObject %s: %v", name, err)
	}
	return data
}

// httpGet reads name over the JSON API.
func httpGet(t *testing.T, srv *fakes.Server, name string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(srv.HTTPURL() + "/storage/v1/b/" + bucket + "/o/" + url.PathEscape(name) + "?alt=media")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.StatusCode
}

// httpPut uploads name over the JSON API (a media upload).
func httpPut(t *testing.T, srv *fakes.Server, name string, data []byte) {
	t.Helper()
	u := srv.HTTPURL() + "/upload/storage/v1/b/" + bucket + "/o?uploadType=media&name=" + url.QueryEscape(name)
	resp, err := http.Post(u, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload %s over HTTP: %s: %s", name, resp.Status, b)
	}
}

// wantCode fails the test unless err has the gRPC code want.
func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got %v (%v), want code %v", got, err, want)
	}
}

// absent fails the test if name exists.
func absent(t *testing.T, cc *grpc.ClientConn, name string) {
	t.Helper()
	_, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: name})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("object %q: got %v, want NotFound: nothing should be stored", name, err)
	}
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func clone[M proto.Message](m M) M { return proto.Clone(m).(M) }
