package grpcx

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The gRPC transport on its own, against a tiny in-process storage v2
// server that each test scripts (registered with a hand-written service
// descriptor, as grpc-go tests its transport): a failure here is the
// transport's.

// script is what the test server answers and what it saw.
type script struct {
	// fail, when not nil, is the answer to every write (WriteObject,
	// BidiWriteObject), after the first message was read.
	fail error
	// breakAfter breaks a BidiWriteObject stream with UNAVAILABLE once it
	// has received that many data bytes (0: never).
	breakAfter int64
	persisted  int64 // QueryWriteStatus's answer

	mu      sync.Mutex
	params  []string // each call's x-goog-request-params
	spec    *wire.WriteObjectSpec
	upload  string // a BidiWriteObject stream's upload id
	content []byte
	crcOK   bool // every message's CRC32C was its content's
	finish  bool // finish_write came
	sums    *wire.ObjectChecksums
}

// seen notes a call's routing header.
func (s *script) seen(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.params = append(s.params, md.Get(xfer.RequestParamsKey)...)
	s.mu.Unlock()
}

// take notes one write message's data; it reports the bytes received so
// far.
func (s *script) take(off int64, cd *wire.ChecksummedData, finish bool, sums *wire.ObjectChecksums) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cd != nil {
		if cd.Crc32C != nil && cd.GetCrc32C() != crc32c.Checksum(cd.GetContent()) {
			s.crcOK = false
		}
		s.content = append(s.content[:off], cd.GetContent()...)
	}
	if finish {
		s.finish, s.sums = true, sums
	}
	return int64(len(s.content))
}

// storageDesc is the part of google.storage.v2.Storage the transport's
// uploads call.
var storageDesc = grpc.ServiceDesc{
	ServiceName: wire.ServiceName,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "StartResumableWrite", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			s := srv.(*script)
			s.seen(ctx)
			req := new(wire.StartResumableWriteRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.spec = req.GetWriteObjectSpec()
			s.mu.Unlock()
			return &wire.StartResumableWriteResponse{UploadId: "upload-1"}, nil
		}},
		{MethodName: "QueryWriteStatus", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			s := srv.(*script)
			s.seen(ctx)
			req := new(wire.QueryWriteStatusRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			if req.GetUploadId() != "upload-1" {
				return nil, status.Error(codes.NotFound, "no such upload")
			}
			return &wire.QueryWriteStatusResponse{WriteStatus: &wire.QueryWriteStatusResponse_PersistedSize{PersistedSize: s.persisted}}, nil
		}},
	},
	Streams: []grpc.StreamDesc{
		{StreamName: "WriteObject", ClientStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			s := srv.(*script)
			s.seen(st.Context())
			for {
				req := new(wire.WriteObjectRequest)
				if err := st.RecvMsg(req); err != nil {
					return err
				}
				if sp := req.GetWriteObjectSpec(); sp != nil {
					s.mu.Lock()
					s.spec = sp
					s.mu.Unlock()
				}
				if s.fail != nil {
					return s.fail
				}
				n := s.take(req.GetWriteOffset(), req.GetChecksummedData(), req.GetFinishWrite(), req.GetObjectChecksums())
				if req.GetFinishWrite() {
					return st.SendMsg(&wire.WriteObjectResponse{WriteStatus: &wire.WriteObjectResponse_Resource{Resource: &wire.Object{Name: "o", Size: n, Generation: 7}}})
				}
			}
		}},
		{StreamName: "BidiWriteObject", ClientStreams: true, ServerStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			s := srv.(*script)
			s.seen(st.Context())
			for {
				req := new(wire.BidiWriteObjectRequest)
				err := st.RecvMsg(req)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				if id := req.GetUploadId(); id != "" {
					s.mu.Lock()
					s.upload = id
					s.mu.Unlock()
				}
				if s.fail != nil {
					return s.fail
				}
				n := s.take(req.GetWriteOffset(), req.GetChecksummedData(), req.GetFinishWrite(), req.GetObjectChecksums())
				if s.breakAfter > 0 && n >= s.breakAfter {
					return status.Error(codes.Unavailable, "the front end went away")
				}
				resp := &wire.BidiWriteObjectResponse{WriteStatus: &wire.BidiWriteObjectResponse_PersistedSize{PersistedSize: n}}
				if req.GetFinishWrite() {
					resp.WriteStatus = &wire.BidiWriteObjectResponse_Resource{Resource: &wire.Object{Name: "o", Size: n, Generation: 7}}
				} else if !req.GetFlush() {
					continue
				}
				if err := st.SendMsg(resp); err != nil {
					return err
				}
			}
		}},
	},
}

// onePool is a pool of one connection.
type onePool struct{ *grpc.ClientConn }

func (p onePool) Conn() *grpc.ClientConn { return p.ClientConn }
func (p onePool) Num() int               { return 1 }

// startServer serves s on loopback and returns the transport to it.
func startServer(t *testing.T, s *script) xfer.Transport {
	t.Helper()
	s.crcOK = true
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&storageDesc, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	tr := New(onePool{cc}, nil, []grpc.CallOption{wire.CallOption(), grpc.MaxRetryRPCBufferSize(0)})
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// testAlloc gives buffers and counts those out.
type testAlloc struct {
	mu  sync.Mutex
	out int
}

func (a *testAlloc) Get(context.Context) (*[]byte, error) {
	a.mu.Lock()
	a.out++
	a.mu.Unlock()
	b := make([]byte, 256<<10)
	return &b, nil
}

func (a *testAlloc) Put(*[]byte) {
	a.mu.Lock()
	a.out--
	a.mu.Unlock()
}

func (a *testAlloc) BufferSize() int { return 256 << 10 }

// newUpload returns the request of an upload of gs://b/o and data's chunk
// in it.
func newUpload(a *testAlloc, data []byte) (*xfer.Request, *xfer.ChunkRef) {
	u := &xfer.Request{Target: xfer.Target{Ctx: context.Background(), Bucket: "b", Object: "o", Params: "bucket=" + xfer.BucketPrefix + "b"}}
	u.Scratch.Spec.Resource = &u.Scratch.Object
	u.Scratch.Object.Name, u.Scratch.Object.Bucket = "o", xfer.BucketPrefix+"b"
	u.Life.Alloc = a
	b, _ := a.Get(context.Background())
	n := copy(*b, data)
	crc := crc32c.Checksum(data)
	u.Scratch.CRC = crc
	u.Scratch.Checksums.Crc32C = &u.Scratch.CRC
	u.Scratch.HasSums = true
	return u, u.Life.NewRef(chunker.Chunk{Buf: b, Data: (*b)[:n], CRC32C: crc})
}

// payload returns n bytes of a pattern.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + i/241)
	}
	return b
}

// TestWriteObject: a one-shot write is one WriteObject call carrying the
// spec, the data with its CRC32C, the finish and the object's checksums,
// routed to the bucket; the service's refusal is its status.
func TestWriteObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		fail error
		code codes.Code
	}{
		{name: "small", size: 100},
		{name: "a chunk", size: 200 << 10},
		{name: "empty", size: 0},
		{name: "refused", size: 1000, fail: status.Error(codes.PermissionDenied, "may not"), code: codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{fail: tc.fail}
			tr := startServer(t, s)
			a := new(testAlloc)
			data := payload(tc.size)
			u, r := newUpload(a, data)
			u.One[0] = r
			o, sent, err := tr.WriteObject(u, u.One[:], 10*time.Second)
			r.Unref()
			u.Life.Wait()
			if status.Code(err) != tc.code {
				t.Fatalf("WriteObject: %v, want code %v", err, tc.code)
			}
			if !sent {
				t.Fatal("WriteObject reports nothing sent")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.params) != 1 || s.params[0] != u.Params {
				t.Fatalf("routing headers %q, want one %q", s.params, u.Params)
			}
			if s.spec.GetResource().GetName() != "o" {
				t.Fatalf("spec %v, want the object's", s.spec)
			}
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
			if tc.code != codes.OK {
				return
			}
			if o.GetSize() != int64(tc.size) || !bytes.Equal(s.content, data) || !s.crcOK {
				t.Fatalf("stored %d bytes (CRC32C right: %v), object %v; want %d bytes", len(s.content), s.crcOK, o, tc.size)
			}
			if !s.finish || s.sums.GetCrc32C() != crc32c.Checksum(data) {
				t.Fatalf("finish %v with checksums %v, want the object's CRC32C", s.finish, s.sums)
			}
		})
	}
}

// testSink is where a stream reports.
type testSink struct {
	mu        sync.Mutex
	persisted int64
	o         *wire.Object
	broke     error
	reported  chan struct{}
}

func (k *testSink) Ack(persisted int64, o *wire.Object, _ []byte) error {
	k.mu.Lock()
	k.persisted, k.o = persisted, o
	k.mu.Unlock()
	k.Signal()
	return nil
}

func (k *testSink) Broke(err error) {
	k.mu.Lock()
	k.broke = err
	k.mu.Unlock()
	k.Signal()
}

func (k *testSink) Signal() {
	select {
	case k.reported <- struct{}{}:
	default:
	}
}

// wait waits until done holds, or fails t after a while.
func (k *testSink) wait(t *testing.T, done func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		k.mu.Lock()
		ok := done()
		k.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-k.reported:
		case <-timeout:
			t.Fatal("no report from the stream")
		}
	}
}

// TestSessionStream: a resumable session's start, its BidiWriteObject
// stream (the upload id first, the data, the finish with the checksums,
// each answer reported to the sink), a stream the service breaks (its
// status reported, and returned by Teardown), and a status query on the
// stream's route.
func TestSessionStream(t *testing.T) {
	const size = 250 << 10
	for _, tc := range []struct {
		name       string
		breakAfter int64
		code       codes.Code
	}{
		{name: "finished"},
		{name: "broken by the service", breakAfter: 1, code: codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{breakAfter: tc.breakAfter, persisted: 123}
			tr := startServer(t, s)
			a := new(testAlloc)
			data := payload(size)
			u, r := newUpload(a, data)
			id, err := tr.StartUpload(u, 10*time.Second)
			if err != nil || id != "upload-1" {
				t.Fatalf("StartUpload: %q, %v", id, err)
			}
			sink := &testSink{reported: make(chan struct{}, 1)}
			st, err := tr.OpenStream(u, id, xfer.NoRoute, 0, sink, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Send(xfer.Pushed{Last: size, Final: true, Window: size, Timeout: 10 * time.Second}, []*xfer.ChunkRef{r}, true); err != nil && tc.code == codes.OK {
				t.Fatal(err)
			}
			sink.wait(t, func() bool { return sink.o != nil || sink.broke != nil })
			sink.mu.Lock()
			persisted, o, broke := sink.persisted, sink.o, sink.broke
			sink.mu.Unlock()
			switch {
			case tc.code == codes.OK && (o.GetSize() != size || persisted != size):
				t.Fatalf("reported %d persisted, object %v; want %d", persisted, o, size)
			case tc.code != codes.OK && status.Code(broke) != tc.code:
				t.Fatalf("the stream broke with %v, want code %v", broke, tc.code)
			}
			if err := st.Teardown(io.EOF); tc.code != codes.OK && status.Code(err) != tc.code {
				t.Fatalf("Teardown: %v, want the stream's status", err)
			}
			persisted, o, err = tr.QueryStatus(u, id, st.Route(), -1, 10*time.Second)
			if err != nil || o != nil || persisted != 123 {
				t.Fatalf("QueryStatus: %d, %v, %v; want the service's 123", persisted, o, err)
			}
			r.Unref()
			u.Life.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.upload != id || !s.crcOK {
				t.Fatalf("the stream named upload %q (CRC32Cs right: %v), want %q", s.upload, s.crcOK, id)
			}
			if tc.code == codes.OK && (!bytes.Equal(s.content, data) || s.sums.GetCrc32C() != crc32c.Checksum(data)) {
				t.Fatalf("stored %d bytes, finish checksums %v; want %d bytes and the object's CRC32C", len(s.content), s.sums, size)
			}
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
		})
	}
}
