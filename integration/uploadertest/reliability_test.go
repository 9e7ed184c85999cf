package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// blackhole is a TCP proxy in front of the fake. The first connection it
// accepts stops forwarding, in both directions and without closing, once the
// client has sent limit bytes through it: a connection that silently died
// (a dropped NAT entry, a wedged middlebox). With a limit of 0 it forwards
// nothing at all, so its HTTP/2 handshake never completes. Later connections
// pass.
type blackhole struct {
	ln     net.Listener
	target string
	limit  int64
	every  bool // every connection dies, not only the first
	accept atomic.Int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackhole(t *testing.T, target string, limit int64) *blackhole {
	t.Helper()
	return newBlackholeEvery(t, target, limit, false)
}

// newBlackholeEvery is newBlackhole whose every connection dies, if every.
func newBlackholeEvery(t *testing.T, target string, limit int64, every bool) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackhole{ln: ln, target: target, limit: limit, every: every}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *blackhole) addr() string { return p.ln.Addr().String() }

func (p *blackhole) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		limit := int64(-1)
		if p.accept.Add(1) == 1 || p.every {
			limit = p.limit
		}
		var dead atomic.Bool
		dead.Store(limit == 0)
		p.wg.Add(2)
		go p.pipe(up, c, limit, &dead)
		go p.pipe(c, up, -1, &dead)
	}
}

// pipe copies src to dst until dead, then discards what src sends; limit >= 0
// makes it dead after that many bytes.
func (p *blackhole) pipe(dst, src net.Conn, limit int64, dead *atomic.Bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 && !dead.Load() {
			chunk := buf[:k]
			if limit >= 0 && n+int64(k) >= limit {
				chunk = chunk[:limit-n]
				dead.Store(true)
			}
			n += int64(len(chunk))
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *blackhole) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// clientVia dials the fake of e through addr.
func clientVia(t *testing.T, addr string, opts ...option.ClientOption) *uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(), append([]option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestDeadConnectionIsReplaced: a connection that stops forwarding mid-upload
// is detected by keepalive and replaced, and the upload resumes on the new
// one, byte-exact, long before its context's deadline; the next upload on the
// same client works at once.
func TestDeadConnectionIsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a keepalive ping (10 s, gRPC's minimum)")
	}
	e := newEnv(t)
	p := newBlackhole(t, e.srv.GRPCAddr(), 1*mib)
	// One connection, the one that dies: a pool would route around it.
	c := clientVia(t, p.addr(), option.WithGRPCConnectionPool(1),
		experimental.WithKeepalive(10*time.Second, 500*time.Millisecond),
		retryWith(uploader.Retry{AttemptTimeout: time.Second, Deadline: 20 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	data := payload(20*mib, 11)
	if _, err := c.Upload(ctx, bucket, "dead-conn", bytes.NewReader(data)); err != nil {
		t.Fatalf("Upload through a connection that died: %v", err)
	}
	sameBytes(t, "stored", e.content("dead-conn"), data)
	if n := p.accept.Load(); n < 2 {
		t.Fatalf("the proxy saw %d connections; the dead one was not replaced", n)
	}
	small := payload(kib, 12)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if _, err := c.Upload(ctx2, bucket, "after", bytes.NewReader(small), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); err != nil {
		t.Fatalf("next upload on the same client: %v", err)
	}
	sameBytes(t, "stored", e.content("after"), small)
}

// TestSilentHandshakeIsAbandoned: a connection that is accepted and then
// never completes its HTTP/2 handshake is given up after the connect
// timeout, and the upload is retried on a new connection well within its
// retry deadline; the next upload works at once.
func TestSilentHandshakeIsAbandoned(t *testing.T) {
	e := newEnv(t)
	p := newBlackhole(t, e.srv.GRPCAddr(), 0)
	// gRPC alone would keep the silent connection for 20 s, past the
	// retry deadline.
	c := clientVia(t, p.addr(), experimental.WithConnectTimeout(300*time.Millisecond),
		retryWith(uploader.Retry{AttemptTimeout: time.Second, Deadline: 10 * time.Second}))
	for _, tc := range []struct {
		name string
		size int
	}{{"first, resumable", 3 * mib}, {"next, one-shot", kib}} {
		name := "silent-handshake/" + tc.name
		data := payload(tc.size, 14)
		if _, err := c.Upload(context.Background(), bucket, name, bytes.NewReader(data), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); err != nil {
			t.Fatalf("%s upload: %v", tc.name, err)
		}
		sameBytes(t, name, e.content(name), data)
	}
	if n := p.accept.Load(); n < 2 {
		t.Fatalf("the proxy saw %d connections; the silent one was not replaced", n)
	}
}

// TestRetryDeadlineHoldsOnDeadConnection: every connection dies after its
// first MiB, and without keepalive nothing but the attempts' deadlines
// notices, so both the resumable and the one-shot upload give up when the
// retry deadline is spent (not at their context's), with the last
// attempt's code, and store nothing.
func TestRetryDeadlineHoldsOnDeadConnection(t *testing.T) {
	e := newEnv(t)
	p := newBlackholeEvery(t, e.srv.GRPCAddr(), 1*mib, true)
	// One connection: a pool would route around the dead one.
	c := clientVia(t, p.addr(), experimental.WithoutKeepalive(), option.WithGRPCConnectionPool(1),
		retryWith(uploader.Retry{AttemptTimeout: 300 * time.Millisecond, Deadline: 2 * time.Second, Policy: uploader.RetryAlways}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		size int
		opts []uploader.WriterOption
	}{
		{"resumable", 4 * mib, nil},
		// Over the MiB a connection lives for: a new connection dies too.
		{"one-shot", 2 * mib, []uploader.WriterOption{uploader.WithChunkSize(4 * mib)}},
	} {
		_, err := c.Upload(ctx, bucket, "dead/"+tc.name, bytes.NewReader(payload(tc.size, 13)), tc.opts...)
		if err == nil {
			t.Fatalf("%s: upload over a dead connection succeeded", tc.name)
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("%s: %v: the context's deadline ended it, not the retry deadline", tc.name, err)
		}
		if !strings.Contains(err.Error(), "retry deadline") || status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("%s: %v (code %v), want the retry deadline with the attempts' DEADLINE_EXCEEDED", tc.name, err, status.Code(err))
		}
		e.absent("dead/" + tc.name)
	}
}

// TestRetryExhaustionKeepsTheCause: running out of retries reports the last
// cause's code and message, to status.Code, to objup's Code and to the
// predicates alike.
func TestRetryExhaustionKeepsTheCause(t *testing.T) {
	e := newEnv(t, retryWith(uploader.Retry{MaxAttempts: 3}))
	for i := 1; i <= 3; i++ {
		e.srv.FailCall("WriteObject", i, codes.Unavailable)
	}
	_, err := e.c.Upload(context.Background(), bucket, "exhausted", bytes.NewReader(payload(kib, 1)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err == nil {
		t.Fatal("upload succeeded through three failures with three attempts")
	}
	var oe *uploader.Error
	if !errors.As(err, &oe) || oe.Code != codes.Unavailable || status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v: objup code %v, status code %v; want UNAVAILABLE for both", err, oe.Code, status.Code(err))
	}
	if !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(status.Convert(err).Message(), "injected") {
		t.Fatalf("error %q does not keep the cause's message and the attempt count", err)
	}
	if n := e.countCalls("WriteObject"); n != 3 {
		t.Fatalf("%d WriteObject calls, want 3", n)
	}
	e.absent("exhausted")
}

// TestRetryUsesItsWholeDeadline: a drawn pause that would overshoot the
// retry deadline is cut short, so the upload keeps trying until the
// deadline is spent instead of giving up early while saying it was reached.
func TestRetryUsesItsWholeDeadline(t *testing.T) {
	const deadline = 2 * time.Second
	// Every pause drawn from this backoff is far beyond the deadline.
	e := newEnv(t, uploader.WithRetry(uploader.Retry{Backoff: gax.Backoff{Initial: time.Hour, Max: time.Hour}, Deadline: deadline}))
	for i := 1; i <= 100; i++ {
		e.srv.FailCall("WriteObject", i, codes.Unavailable)
	}
	start := time.Now()
	_, err := e.c.Upload(context.Background(), bucket, "deadline-spent", bytes.NewReader(payload(kib, 1)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	took := time.Since(start)
	if uploader.CodeOf(err) != codes.Unavailable || !strings.Contains(err.Error(), "retry deadline of 2s reached") {
		t.Fatalf("upload: %v, want UNAVAILABLE once the retry deadline is reached", err)
	}
	if n := e.countCalls("WriteObject"); n < 2 {
		t.Fatalf("%d WriteObject calls: the upload gave up after %v without retrying", n, took)
	}
	// A lower bound only: a loaded machine makes it later, never sooner.
	// The last retry starts with a tenth of the deadline left.
	if took < deadline*8/10 {
		t.Fatalf("the upload gave up after %v, before its %v retry deadline was spent", took, deadline)
	}
	e.absent("deadline-spent")
}

// TestBadHeaderRejectedBeforeAnyRPC: a header value gRPC would refuse is
// InvalidArgument at NewWriter, with nothing sent and nothing retried.
func TestBadHeaderRejectedBeforeAnyRPC(t *testing.T) {
	e := newEnv(t)
	for _, kv := range [][2]string{{"x-request-id", "a\nb"}, {"x-request-id", "caf\xc3\xa9"}, {"bad key", "v"}} {
		ctx := header.Append(context.Background(), kv[0], kv[1])
		start := time.Now()
		_, err := e.c.Upload(ctx, bucket, "hdr", bytes.NewReader(payload(kib, 1)), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
		if uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("header %q: Upload = %v, want InvalidArgument", kv[0], err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("header %q: rejected after %v: it was retried", kv[0], time.Since(start))
		}
	}
	if m := e.methods(); len(m) != 0 {
		t.Fatalf("calls made for bad headers: %v", m)
	}
}

// TestLocalErrorsAreNotRetried: an error gRPC raises before the request
// leaves the process is never retried, even with a code that is retried
// when the service sends it. A header key gRPC reserves for itself is
// refused by gRPC; header.Validate rejects it first, so this goes through
// gRPC's own metadata with a value only gRPC checks.
func TestLocalErrorsAreNotRetried(t *testing.T) {
	e := newEnv(t, retryWith(uploader.Retry{Policy: uploader.RetryAlways}))
	ctx := context.Background()
	// Outgoing gRPC metadata added without the header chain is not
	// validated by objup; gRPC refuses the value with INTERNAL.
	ctx = metadataWithBadValue(ctx)
	start := time.Now()
	_, err := e.c.Upload(ctx, bucket, "local", bytes.NewReader(payload(kib, 1)))
	if err == nil {
		t.Fatal("upload with a value gRPC refuses succeeded")
	}
	if n := e.countCalls("WriteObject"); n != 0 {
		t.Fatalf("%d WriteObject calls reached the server", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("failed after %v: the local error was retried", d)
	}
}

func metadataWithBadValue(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-bad", "a\nb")
}
