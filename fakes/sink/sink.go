package sink

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/fakes/link"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// Server is a storage v2 gRPC server for benchmarks: it answers the write
// RPCs with the checks the fake ([github.com/objup/objup/fakes.Server])
// makes, and discards the content once checked, so that a benchmark's
// server costs little more than receiving the bytes and the client is what
// it measures. Create it with [New] or
// [NewTest]; the zero value is not usable. All methods are safe for
// concurrent use.
//
// # Methods and checks
//
// WriteObject, BidiWriteObject, StartResumableWrite and QueryWriteStatus, on
// the real method names (/google.storage.v2.Storage/...); any other method
// answers codes.Unimplemented. As the fake does, the sink checks:
//
//   - the CRC32C of each message's content, when the message carries one,
//     and the whole-object CRC32C (and MD5, see below) given in
//     object_checksums: a mismatch is codes.DataLoss;
//   - write offsets: a message with data must start where the data received
//     so far ends, and a finish_write must end there (an appendable
//     object's finish_write without content may carry any offset up to
//     there): a gap or an overlap is codes.InvalidArgument;
//   - at most 2 MiB of content per message, and object_size when the spec
//     sets it: codes.InvalidArgument;
//   - finish_write: a one-shot write (write_object_spec in its first message)
//     whose stream ends without it is codes.InvalidArgument, and nothing is
//     counted as stored; a resumable stream that ends without it answers the
//     persisted size, and the session goes on;
//   - bucket and object names: codes.InvalidArgument; customer-supplied
//     encryption keys: codes.Unimplemented.
//
// Appendable objects are written as the fake writes them (see append.go
// and [github.com/objup/objup/fakes]): a BidiWriteObject whose
// write_object_spec sets appendable is answered at once with the
// unfinalized object and a write handle; flush persists the bytes
// received, state_lookup and a clean half-close answer with the persisted
// size, its CRC32C and the handle; a stream that breaks loses what it did
// not flush; an append_object_spec resumes the writer with its handle or
// takes the object over without one (fencing the writer before);
// finish_write persists, checks the whole-object CRC32C and finalizes. The
// sink remembers the 65,536 appendable objects it wrote last. A bucket
// made zonal ([WithZonalBucket]) takes appendable writes only.
//
// Every well-formed bucket exists, and no object ever does: the sink keeps
// nothing but counts, so preconditions are judged against an absent object
// (if_generation_match=0 holds; any other condition fails with
// codes.FailedPrecondition, as GCS answers for a missing object).
// finish_write is answered with the Object: name, bucket, attributes from the
// spec, a fresh generation, metageneration 1, size, CRC32C (and MD5 when
// computed). BidiWriteObject answers state_lookup with the persisted size.
// QueryWriteStatus answers with the persisted size, or the Object once
// finalized. The sink remembers the 65,536 resumable sessions it used
// last, open or finalized (a few hundred bytes each), in the fake's
// session registry; an older one is gone (codes.NotFound).
//
// # Cost
//
// The sink decodes a write message with its own gRPC codec, which reads the
// content where gRPC received it (a view of the message's received buffers)
// instead of copying it twice, as grpc-go's proto codec does (once to join
// the message, once into the decoded []byte). Per message it then runs one
// CRC32C pass over the content, combines it into the object's CRC32C
// without reading the data again, and drops the bytes; the other fields are
// decoded as usual (a few small allocations). MD5, at roughly 0.5 to 1 GB/s
// the dearest check, runs only when the client declared an MD5 before or
// with the first content (in StartResumableWrite or in the write's first
// message), or for every write with [WithMD5]; an MD5 declared only after
// content the sink did not hash fails with codes.Unimplemented.
//
// [Server.Stats] counts what the sink received and finalized, as it happens:
// once a client has the answer to a call, the call is counted.
//
// # Write capacity
//
// With [WithCapacity] every bucket has the fake's write capacity (package
// fakes/capacity: a token bucket of writes, autoscaling, a limit per object
// name, a share of 503), checked on the sink's write path as the fake
// checks it, so that a benchmark meets the same pushback on either server;
// [Server.CapacityStats] counts its decisions per bucket and tenant.
type Server struct {
	grpc *grpc.Server
	addr string
	cfg  config

	mu   sync.Mutex
	kept map[string]keptObject // WithCompose: the objects finalized, by keptKey

	sessions store.Sessions[*upload]
	appends  store.Sessions[*upload] // appendable objects, by appendKey
	lastGen  atomic.Int64
	limiter  *capacity.Limiter // WithCapacity; nil: none

	objects, bytes, messages, received, started, failed atomic.Int64
	appendable                                          atomic.Int64 // appendable objects created

	serving   sync.WaitGroup
	serveErr  error // guarded by mu
	closeOnce sync.Once
	closeErr  error
}

// DefaultAddr is the address the sink listens on unless told otherwise: a
// free port on the IPv4 loopback interface.
const DefaultAddr = "127.0.0.1:0"

// maxSessions is how many resumable sessions a Server remembers.
const maxSessions = 1 << 16

// Option configures [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	addr       string
	md5        bool
	link       link.Config
	maxStreams int
	compose    bool            // WithCompose
	zonal      map[string]bool // WithZonalBucket
	capacity   *capacity.Config
	// copyDecode decodes write messages as grpc-go's proto codec does
	// (content copied): the baseline of the sink's codec, in benchmarks.
	copyDecode bool
}

// WithAddr sets the TCP address ("host:port") the sink listens on, with
// the rules of [WithGRPCAddr]: the default is [DefaultAddr], port 0 picks a
// free port, and an empty host means 127.0.0.1.
func WithAddr(addr string) Option {
	return optionFunc(func(c *config) { c.addr = addr })
}

// WithMD5 makes the sink hash every write's content with MD5 from its
// first byte, so that an MD5 declared only at finish_write is checked too,
// and the Object it answers carries the MD5. It costs roughly 1 to 2 CPU
// seconds per GiB on the server.
func WithMD5() Option {
	return optionFunc(func(c *config) { c.md5 = true })
}

// WithLink puts a simulated network path in front of the sink's port, as
// [github.com/objup/objup/fakes.WithLink] does for the fake.
func WithLink(cfg link.Config) Option {
	return optionFunc(func(c *config) { c.link = cfg })
}

// WithMaxStreams caps the concurrent streams of one connection to the
// sink at n, as [github.com/objup/objup/fakes.WithMaxStreams] does for the
// fake; 0 is gRPC's limit.
func WithMaxStreams(n int) Option {
	return optionFunc(func(c *config) { c.maxStreams = n })
}

// Stats counts a [Server]'s work since it started.
type Stats struct {
	// Objects counts the writes finalized; Bytes, their size in all.
	Objects, Bytes int64
	// Messages counts the write messages received on WriteObject and
	// BidiWriteObject streams; Received, the content bytes that passed the
	// checks.
	Messages, Received int64
	// Sessions counts the resumable sessions started.
	Sessions int64
	// Failed counts the calls that ended with an error.
	Failed int64
}

// New starts a sink on loopback and returns it once it listens. The
// caller must call [Server.Close]. On error nothing is left running.
func New(opts ...Option) (*Server, error) {
	cfg := config{addr: DefaultAddr}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil {
		return nil, fmt.Errorf("fakes: sink address %q: %v", cfg.addr, err)
	}
	for b := range cfg.zonal {
		if err := store.CheckBucketName(b); err != nil {
			return nil, fmt.Errorf("fakes: sink: zonal bucket: %v", err)
		}
	}
	if cfg.link.RTT < 0 || cfg.link.Bandwidth < 0 || cfg.maxStreams < 0 {
		return nil, fmt.Errorf("fakes: sink link %+v and max streams %d must not be negative", cfg.link, cfg.maxStreams)
	}
	var limiter *capacity.Limiter
	if cfg.capacity != nil {
		var err error
		if limiter, err = capacity.New(capacity.WithAllBuckets(*cfg.capacity)); err != nil {
			return nil, fmt.Errorf("fakes: sink: %w", err)
		}
	}
	lis, err := net.Listen("tcp", api.ListenAddr(cfg.addr))
	if err != nil {
		return nil, fmt.Errorf("fakes: sink listener: %w", err)
	}
	k := &Server{addr: api.DialAddr(lis.Addr()), cfg: cfg, limiter: limiter}
	// Sessions never expire by time in the sink: only the cap evicts them.
	k.sessions.Init(math.MaxInt64, maxSessions)
	k.appends.Init(math.MaxInt64, maxSessions)
	if cfg.compose {
		k.kept = make(map[string]keptObject)
	}
	sopts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(codec{}),
		// Above any sane message, so that an oversized one gets a clear
		// InvalidArgument rather than gRPC's ResourceExhausted.
		grpc.MaxRecvMsgSize(64 << 20),
	}
	if cfg.maxStreams > 0 {
		sopts = append(sopts, grpc.MaxConcurrentStreams(uint32(cfg.maxStreams)))
	}
	sopts = append(sopts, link.ServerWindows(cfg.link)...)
	k.grpc = grpc.NewServer(sopts...)
	lis = link.Listen(lis, cfg.link)
	k.grpc.RegisterService(&serviceDesc, k)
	k.serving.Add(1)
	go func() {
		defer k.serving.Done()
		if err := k.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			k.mu.Lock()
			k.serveErr = err
			k.mu.Unlock()
		}
	}()
	return k, nil
}

// TB is the part of testing.TB that [NewTest] uses; *testing.T, *testing.B
// and *testing.F satisfy it, and programs that import the sink do not link
// the testing package.
type TB = api.TB

// NewTest starts a sink like [New] and registers its Close with
// tb.Cleanup, reporting an error from Close with tb.Errorf. It stops the test
// with tb.Fatalf if the sink cannot start.
func NewTest(tb TB, opts ...Option) *Server {
	tb.Helper()
	return api.StartTest(tb, "sink.NewTest", func() (*Server, error) { return New(opts...) })
}

// GRPCAddr returns the sink's host:port, e.g. "127.0.0.1:40123". It speaks
// plaintext HTTP/2: dial it with insecure transport credentials.
func (k *Server) GRPCAddr() string { return k.addr }

// Stats returns the sink's counts.
func (k *Server) Stats() Stats {
	return Stats{
		Objects:  k.objects.Load(),
		Bytes:    k.bytes.Load(),
		Messages: k.messages.Load(),
		Received: k.received.Load(),
		Sessions: k.started.Load(),
		Failed:   k.failed.Load(),
	}
}

// Close stops the sink: it stops accepting connections, waits up to 5
// seconds for calls in flight, then cancels those left, and returns once
// every goroutine the sink started has ended. Close is idempotent: later
// calls return the first call's result.
func (k *Server) Close() error {
	k.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			k.grpc.GracefulStop()
			close(done)
		}()
		timer := time.NewTimer(api.CloseGrace)
		select {
		case <-done:
		case <-timer.C:
			k.grpc.Stop()
			<-done
		}
		timer.Stop()
		k.serving.Wait()
		k.mu.Lock()
		k.sessions.Reset()
		k.appends.Reset()
		if k.serveErr != nil {
			k.closeErr = fmt.Errorf("fakes: sink: serve: %w", k.serveErr)
		}
		k.mu.Unlock()
	})
	return k.closeErr
}

// handler is the handler type of serviceDesc: the *Server itself.
type handler interface{ GRPCAddr() string }

// serviceDesc serves the write methods with handlers that receive
// *sinkMsg, which only sinkCodec decodes.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: wire.ServiceName,
	HandlerType: (*handler)(nil),
	Methods: []grpc.MethodDesc{
		sinkMethod("StartResumableWrite", (*Server).startResumableWrite),
		sinkMethod("QueryWriteStatus", (*Server).queryWriteStatus),
		sinkMethod("ComposeObject", (*Server).composeObject),
		sinkMethod("DeleteObject", (*Server).deleteObject),
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName: "WriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				k := srv.(*Server)
				return k.count(k.write(stream, false))
			},
			ClientStreams: true,
		},
		{
			StreamName: "BidiWriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				k := srv.(*Server)
				return k.count(k.write(stream, true))
			},
			ServerStreams: true,
			ClientStreams: true,
		},
	},
	Metadata: "google/storage/v2/storage.proto",
}

// sinkMethod is the description of a unary method the sink serves with
// call, which gets the call's context and the decoded request; the call is
// counted.
func sinkMethod[Req, Resp any](name string, call func(*Server, context.Context, *Req) (*Resp, error)) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		k := srv.(*Server)
		req := new(Req)
		if err := dec(req); err != nil {
			return nil, err
		}
		resp, err := call(k, ctx, req)
		return resp, k.count(err)
	}}
}

// count counts a call that ends with err, and returns err.
func (k *Server) count(err error) error {
	if err != nil {
		k.failed.Add(1)
	}
	return err
}

// upload is an object being written to the sink: a one-shot write (id
// == ""), which lives as long as its stream, a resumable session, or an
// appendable object (see append.go). It is the engine's writes.Upload.
type upload struct {
	id       string
	sessions *store.Sessions[*upload] // a resumable session's registry
	bucket   string                   // the bare bucket name
	res      *wire.Object             // the spec's resource: the object's name and attributes
	cond     *store.Conditions

	appendable bool
	app        writes.Appendable // appendable: the writer state (see append.go)

	mu           sync.Mutex
	writes.State              // size and checksums; MD5 is nil unless the content is hashed
	result       *wire.Object // set once finalized
	gone         bool         // session dropped after a final failure
}

// newUpload validates a write's spec, counts it against its bucket's
// capacity, and returns an upload for it.
func (k *Server) newUpload(ctx context.Context, spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams) (*upload, error) {
	bucket, err := writes.CheckSpec(spec, common)
	if err != nil {
		return nil, err
	}
	if err := store.CheckBucketName(bucket); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	res := spec.GetResource()
	if err := k.checkZonal(bucket, spec); err != nil {
		return nil, err
	}
	if !spec.GetAppendable() {
		if err := k.unfinalized(bucket, res.GetName()); err != nil {
			return nil, err
		}
	}
	if err := k.admit(ctx, bucket, res.GetName()); err != nil {
		return nil, err
	}
	up := &upload{bucket: bucket, res: res, cond: api.SpecConditions(spec), State: writes.State{Limit: spec.ObjectSize}}
	if k.cfg.md5 {
		up.MD5 = md5.New()
	}
	return up, nil
}

// declare notes the whole-object checksums a message declares, before its
// content is accepted: an MD5 declared before any content starts the
// hashing. up.mu is held.
func (up *upload) declare(sums *wire.ObjectChecksums) error {
	if len(sums.GetMd5Hash()) == 0 || up.MD5 != nil {
		return nil
	}
	if up.Size > 0 {
		return status.Errorf(codes.Unimplemented, "the sink cannot check an MD5 declared after %d bytes of content it did not hash: declare it before the content, or run the sink with MD5 on (sink.WithMD5, gcssink -md5)", up.Size)
	}
	up.MD5 = md5.New()
	return nil
}

// startResumableWrite opens a resumable session.
func (k *Server) startResumableWrite(ctx context.Context, req *wire.StartResumableWriteRequest) (*wire.StartResumableWriteResponse, error) {
	if req.GetWriteObjectSpec().GetAppendable() {
		return nil, status.Error(codes.InvalidArgument, "write_object_spec.appendable: appendable objects are written with BidiWriteObject, not StartResumableWrite")
	}
	up, err := k.newUpload(ctx, req.GetWriteObjectSpec(), req.GetCommonObjectRequestParams())
	if err != nil {
		return nil, err
	}
	if sums := req.GetObjectChecksums(); sums != nil {
		_ = up.declare(sums) // no content yet: cannot fail
		up.Declare(sums)
	}
	up.id, up.sessions = rand.Text(), &k.sessions
	k.sessions.Add(up.id, up)
	k.started.Add(1)
	return &wire.StartResumableWriteResponse{UploadId: up.id}, nil
}

// session returns the resumable session id.
func (k *Server) session(id string) (*upload, error) {
	up, ok := k.sessions.Get(id)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	return up, nil
}

// Lock, Unlock, Written, Session, Appending, Done and Drop implement
// writes.Upload.
func (up *upload) Lock()                  { up.mu.Lock() }
func (up *upload) Unlock()                { up.mu.Unlock() }
func (up *upload) Written() *writes.State { return &up.State }
func (up *upload) Session() string        { return up.id }
func (up *upload) Done() (*wire.Object, bool) {
	return up.result, up.gone
}

func (up *upload) Appending() *writes.Appendable {
	if !up.appendable {
		return nil
	}
	return &up.app
}

// Drop forgets a resumable session after a failure it cannot recover
// from. up.mu is held.
func (up *upload) Drop() {
	if up.id == "" {
		return
	}
	up.gone = true
	up.sessions.Remove(up.id)
}

// queryWriteStatus reports a session's persisted size, or its object once
// finalized.
func (k *Server) queryWriteStatus(_ context.Context, req *wire.QueryWriteStatusRequest) (*wire.QueryWriteStatusResponse, error) {
	up, err := k.session(req.GetUploadId())
	if err != nil {
		return nil, err
	}
	return writes.Query(up)
}

// writeStream is the state of one WriteObject or BidiWriteObject stream:
// the write engine's Stream (writes.Engine drives it), which counts the
// bytes of its upload and drops them.
type writeStream struct {
	k   *Server
	ctx context.Context
	up  *upload
	eng writes.Engine
	msg *sinkMsg // the message being handled

	// Appendable objects (see append.go).
	epoch        uint64 // the writer epoch the stream writes as
	sendResource bool   // the first response carries the object
}

// write serves a WriteObject (bidi false) or BidiWriteObject stream.
func (k *Server) write(stream grpc.ServerStream, bidi bool) error {
	m := &sinkMsg{bidi: bidi, copyDecode: k.cfg.copyDecode}
	st := &writeStream{k: k, ctx: stream.Context(), msg: m}
	st.eng = writes.Engine{Stream: st, Bidi: bidi}
	defer st.abandon()
	defer m.release()
	for first := true; ; first = false {
		err := stream.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			obj, size, err := st.eng.End()
			if err != nil {
				return err
			}
			if obj == nil && st.up.appendable {
				return stream.SendMsg(st.appendResponse(false))
			}
			return stream.SendMsg(sinkResponse(bidi, obj, size))
		}
		if err != nil {
			return err
		}
		k.messages.Add(1)
		m.f = m.fields()
		obj, size, err := st.eng.Handle(&m.f, int64(m.n), m.hasData)
		m.release()
		if err != nil {
			return err
		}
		if obj != nil {
			return stream.SendMsg(sinkResponse(bidi, obj, 0))
		}
		if st.up.appendable && (first || m.f.Lookup) {
			if err := stream.SendMsg(st.appendResponse(first)); err != nil {
				return err
			}
			continue
		}
		if bidi && m.f.Lookup {
			if err := stream.SendMsg(sinkResponse(true, nil, size)); err != nil {
				return err
			}
		}
	}
}

func sinkResponse(bidi bool, obj *wire.Object, size int64) any {
	if bidi {
		return api.BidiResponse(obj, size)
	}
	return api.WriteResponse(obj, size)
}

// NewUpload implements writes.Stream.
func (st *writeStream) NewUpload(m *api.WriteMsg) (writes.Upload, error) {
	up, err := st.k.newUpload(st.ctx, m.Spec, m.Common)
	return st.opened(up, err)
}

// Resume implements writes.Stream.
func (st *writeStream) Resume(id string) (writes.Upload, error) {
	up, err := st.k.session(id)
	return st.opened(up, err)
}

// OpenAppendable implements writes.Stream.
func (st *writeStream) OpenAppendable(m *api.WriteMsg) (writes.Upload, error) {
	if m.Sums != nil && !m.Finish {
		return nil, writes.ErrAppendSums
	}
	up, err := st.k.newUpload(st.ctx, m.Spec, m.Common)
	if err == nil {
		err = up.cond.CheckVersion(st.k.current(up.bucket, up.res.GetName()))
	}
	if err != nil {
		return nil, err
	}
	st.k.openAppendable(st, up)
	return up, nil
}

// OpenAppend implements writes.Stream.
func (st *writeStream) OpenAppend(m *api.WriteMsg) (writes.Upload, error) {
	err := st.k.openAppend(st, m) // sets st.up
	return st.opened(st.up, err)
}

// opened makes up the stream's upload, if err is nil.
func (st *writeStream) opened(up *upload, err error) (writes.Upload, error) {
	if err != nil {
		return nil, err
	}
	st.up = up
	return up, nil
}

// Epoch implements writes.Stream.
func (st *writeStream) Epoch() uint64 { return st.epoch }

// Check implements writes.Stream: an MD5 declared before any content
// starts the hashing (an appendable object has no MD5 to hash).
func (st *writeStream) Check(m *api.WriteMsg) error {
	if m.Sums != nil && !st.up.appendable {
		return st.up.declare(m.Sums)
	}
	return nil
}

// Accept implements writes.Stream: it checks the content of the message
// being handled, adds it to the upload's size and checksums, and drops
// it.
func (st *writeStream) Accept(f *api.WriteMsg) error {
	up, m, offset := st.up, st.msg, f.Offset
	n := int64(m.n)
	if err := up.CheckMessage(offset, n, up.appendable); err != nil {
		return err
	}
	var crc uint32
	m.content(func(b []byte) { crc = crc32.Update(crc, crc32c.Table, b) })
	if m.hasCRC {
		if err := writes.CheckCRC(offset, n, m.sentCRC, crc); err != nil {
			return err
		}
	}
	if skip := up.Size - offset; skip > 0 {
		// An appendable object's writer resent bytes persisted: the
		// overlap is dropped.
		skip = min(skip, n)
		crc, n = 0, n-skip
		m.content(func(b []byte) {
			if d := min(skip, int64(len(b))); d > 0 {
				b, skip = b[d:], skip-d
			}
			crc = crc32.Update(crc, crc32c.Table, b)
		})
		if n == 0 {
			return nil
		}
	}
	if up.MD5 != nil {
		// A second pass, and only once the CRC32C held: the digest must
		// not take in bytes that are refused.
		m.content(func(b []byte) { up.MD5.Write(b) })
	}
	up.Add(n, crc)
	st.k.received.Add(n)
	return nil
}

// Checked implements writes.Stream.
func (st *writeStream) Checked() error { return nil }

// Persist implements writes.Stream: the bytes received are persisted.
func (st *writeStream) Persist() error {
	st.up.app.Persist(&st.up.State)
	return nil
}

// Finalize implements writes.Stream.
func (st *writeStream) Finalize() (*wire.Object, error) { return st.k.finalize(st.up) }

// FinalizeAppendable implements writes.Stream.
func (st *writeStream) FinalizeAppendable() (*wire.Object, error) {
	return st.k.finalizeAppendable(st.up)
}

// finalize verifies a complete upload and returns its Object
// (writes.Finalize); the content is already gone. up.mu is held.
func (k *Server) finalize(up *upload) (*wire.Object, error) {
	return writes.Finalize(up, nil, func(sum []byte) (*wire.Object, error) {
		if err := up.cond.CheckVersion(k.current(up.bucket, up.res.GetName())); err != nil {
			return nil, err
		}
		up.result = k.object(up, k.generation(), up.Size, up.CRC, true, sum)
		up.MD5 = nil
		k.keep(up.bucket, up.result, 0)
		k.objects.Add(1)
		k.bytes.Add(up.Size)
		return up.result, nil
	})
}

// generation returns a new generation: the time in microseconds, as GCS,
// made unique and increasing.
func (k *Server) generation() int64 {
	now := time.Now().UnixMicro()
	for {
		last := k.lastGen.Load()
		g := max(now, last+1)
		if k.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}
