package sink

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/link"
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
