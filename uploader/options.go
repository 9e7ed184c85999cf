package uploader

import (
	"fmt"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/telemetry"
)

// MaxChunkSize is the largest chunk size WithChunkSize accepts: 64 MiB. A
// chunk is one buffer held per upload, and an object up to the chunk size
// goes out in one call, so a chunk much larger than the official client's
// 16 MiB default only costs memory: the service's throughput does not grow
// with it, since every message carries at most 2 MiB anyway.
const MaxChunkSize = 64 << 20

// Client-wide options. They are option.ClientOption values, so they mix freely
// with the google.golang.org/api/option ones (credentials, endpoint, gRPC
// connection) in one NewClient call.

type clientConfig struct {
	alloc        pool.Allocator
	chunkSize    int
	inFlight     int
	maxInFlight  int64
	tenantLimits TenantLimits
	retry        retryConfig
	keepalive    keepaliveConfig
	telemetry    telemetry.Config
	http         bool
	noAdmission  bool // WithoutAdmission
	rampFrom     float64
	rampEvery    time.Duration // WithWriteRamp
	err          error         // the first invalid option
}

// keepaliveConfig is how the client's connections are watched: see
// WithKeepalive and WithConnectTimeout.
type keepaliveConfig struct {
	time, timeout time.Duration
	off           bool
	connect       time.Duration // the handshake's bound
}

type clientOptionFunc struct {
	internaloption.EmbeddableAdapter
	f func(*clientConfig)
}

func (o *clientOptionFunc) applyClient(c *clientConfig) { o.f(c) }

func newClientOption(f func(*clientConfig)) option.ClientOption {
	return &clientOptionFunc{f: f}
}

// SharedOption is an option that configures either a whole Client (in
// NewClient, as default for all its Writers) or one Writer (in NewWriter,
// Upload or Item.Options), where it overrides the client's setting.
type SharedOption interface {
	option.ClientOption
	WriterOption
}

type sharedOption struct {
	internaloption.EmbeddableAdapter
	chunkSize int
	retry     []RetryOption
}

func (o *sharedOption) applyClient(c *clientConfig) {
	if o.chunkSize != 0 {
		c.chunkSize = o.chunkSize
	}
	for _, r := range o.retry {
		if r == nil {
			continue
		}
		if err := r.applyRetry(&c.retry); err != nil && c.err == nil {
			c.err = err
		}
	}
}

func (o *sharedOption) applyWriter(c *writerConfig) error {
	if o.chunkSize != 0 {
		c.chunkSize = o.chunkSize
	}
	if len(o.retry) > 0 && !c.ownRetry {
		// The Writer shares the client's retry settings until it changes
		// them.
		own := *c.retry
		c.retry, c.ownRetry = &own, true
	}
	for _, r := range o.retry {
		if r == nil {
			continue
		}
		if err := r.applyRetry(c.retry); err != nil {
			return err
		}
	}
	return nil
}

// WithPool makes every Writer of the client take its chunk buffers from a (for
// instance a pool.Pool with a byte budget, or the caller's own Allocator). Its
// BufferSize must be a positive multiple of pool.Quantum, at most
// MaxChunkSize. The default is pool.Default(), shared by the whole process.
func WithPool(a pool.Allocator) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.alloc = a })
}

// WithChunkSize sets the size of a chunk: a positive multiple of pool.Quantum
// (256 KiB), at most MaxChunkSize (64 MiB); anything else is rejected by
// NewClient or NewWriter. Objects up to this size go out in one WriteObject
// call; larger ones stream through a resumable session, one chunk buffer per
// chunk in flight. Chunks are sent in messages of at most 2 MiB, each with
// its own CRC32C.
//
// On NewClient it applies to every Writer, which then take their buffers from
// a pool of that size owned by the client (it cannot be combined with
// WithPool, whose BufferSize is the chunk size). On NewWriter it applies to
// that Writer only, which takes its buffers from the client's pool of that
// size.
func WithChunkSize(n int) SharedOption {
	if n == 0 {
		n = -1 // an explicit 0 is invalid, not "unset"
	}
	return &sharedOption{chunkSize: n}
}

// WithRetry configures retries: the backoff, which uploads are retried, which
// errors, how many attempts, and the deadlines (see RetryOption). On NewClient
// it sets the defaults of every Writer; on NewWriter it changes them for that
// Writer. Invalid settings (negative durations or counts) are rejected by
// NewClient or NewWriter.
func WithRetry(opts ...RetryOption) SharedOption {
	return &sharedOption{retry: opts}
}

// WithChunksInFlight fixes how many chunks of one upload may be handed to
// the session and not yet acknowledged as persisted by the service: the
// memory of one upload is at most n+1 chunks, and its window does not adapt
// to the path (see WithMaxInFlight). Consecutive chunks go out together in
// messages of up to 2 MiB, so a window of at least 2 MiB keeps messages at
// the service's limit. Without it, the window adapts (see WithMaxInFlight).
func WithChunksInFlight(n int) option.ClientOption {
	return newClientOption(func(c *clientConfig) {
		if n < 1 && c.err == nil {
			c.err = fmt.Errorf("chunks in flight %d must be at least 1", n)
		}
		c.inFlight = n
	})
}

// DefaultMaxInFlight is the most bytes one upload may have sent and not
// acknowledged unless WithMaxInFlight says otherwise: 64 MiB keep a path of
// 100 ms at 600 MB/s full.
const DefaultMaxInFlight = 64 << 20

// WithMaxInFlight bounds the window of one upload: the bytes it may have
// sent and not yet acknowledged as persisted, which is also the memory its
// chunks take at most. The window starts at 16 MiB (the official Writer's
// chunk; near the service acknowledgements return long before that much is
// in flight) and grows fourfold, one round trip after another, while the
// acknowledged rate keeps rising (the path's bandwidth x round trip is not
// filled yet), up to n; it stops growing once the rate does not rise, and
// halves, down to 4 MiB, when the pool's budget (pool.WithBudget) runs out,
// so uploads share the budget instead of one holding all of it.
// Over the JSON API one PUT carries half the window. n must be at least 4 MiB
// (MaxChunkSize-sized chunks need two chunks); the default is
// DefaultMaxInFlight. WithChunksInFlight fixes the window instead.
func WithMaxInFlight(n int64) option.ClientOption {
	return newClientOption(func(c *clientConfig) {
		if n < defaultWindow && c.err == nil {
			c.err = fmt.Errorf("max in flight %d must be at least %d (4 MiB)", n, defaultWindow)
		}
		c.maxInFlight = n
	})
}

// Keepalive defaults: a connection on which an RPC is in flight and nothing
// arrived for 30 s is pinged, and closed if the ping is not answered within
// 20 s, so the RPCs on it fail and are retried on a new connection. These
// are the values the official client's documentation recommends; gRPC
// refuses pings more often than every 10 s.
const (
	DefaultKeepaliveTime    = 30 * time.Second
	DefaultKeepaliveTimeout = 20 * time.Second
)

// WithKeepalive sets the gRPC keepalive of the client's connection: after t
// without anything received while an RPC is in flight, the client pings the
// server, and closes the connection if no answer comes within timeout. That
// is how a connection that silently stopped forwarding (a dead NAT entry, a
// black-holing proxy) is detected and replaced. Pings are never sent on an
// idle connection. t is raised to gRPC's minimum of 10 s; zero values keep the
// defaults (DefaultKeepaliveTime, DefaultKeepaliveTimeout); negative ones are
// rejected. Use WithoutKeepalive to turn it off.
func WithKeepalive(t, timeout time.Duration) option.ClientOption {
	return newClientOption(func(c *clientConfig) {
		if (t < 0 || timeout < 0) && c.err == nil {
			c.err = fmt.Errorf("keepalive time %v and timeout %v must not be negative", t, timeout)
		}
		if t > 0 {
			c.keepalive.time = t
		}
		if timeout > 0 {
			c.keepalive.timeout = timeout
		}
		c.keepalive.off = false
	})
}

// DefaultConnectTimeout bounds the opening of a gRPC connection: TCP, TLS
// and the HTTP/2 handshake, which take a few round trips (under half a
// second at 100 ms RTT), or a few seconds when a SYN is lost and resent.
const DefaultConnectTimeout = 5 * time.Second

// WithConnectTimeout bounds how long a new gRPC connection may take to become
// ready (TCP, TLS and the HTTP/2 handshake). A connection that has not
// completed its handshake by then (a server or middlebox that accepts the
// TCP connection and then says nothing) is closed, the RPCs waiting for it
// fail with UNAVAILABLE and are retried, and the next attempt dials anew.
// Keepalive (WithKeepalive) cannot help there: it only watches connections
// that became ready. gRPC's own bound is 20 s; objup's default is
// DefaultConnectTimeout. It does not apply to a connection passed with
// option.WithGRPCConn, nor to WithHTTP clients (net/http bounds its own
// dial and TLS handshake). d must be positive.
func WithConnectTimeout(d time.Duration) option.ClientOption {
	return newClientOption(func(c *clientConfig) {
		if d <= 0 && c.err == nil {
			c.err = fmt.Errorf("connect timeout %v must be positive", d)
		}
		c.keepalive.connect = d
	})
}

// WithoutKeepalive turns the connection's keepalive off: a silently dead
// connection is then only noticed through the attempt timeout of each RPC
// (see WithAttemptTimeout), and not replaced.
func WithoutKeepalive() option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.keepalive.off = true })
}

func (c *clientConfig) validate() error {
	if c.err != nil {
		return c.err
	}
	if c.alloc != nil && c.chunkSize != 0 {
		return fmt.Errorf("WithChunkSize and WithPool exclude each other: the pool's BufferSize is the chunk size")
	}
	if c.chunkSize != 0 {
		if err := checkChunkSize(c.chunkSize); err != nil {
			return err
		}
	}
	if c.alloc != nil {
		if n := c.alloc.BufferSize(); n <= 0 || n%pool.Quantum != 0 || n > MaxChunkSize {
			return fmt.Errorf("pool buffer size %d is not a positive multiple of %d (256 KiB) up to %d (MaxChunkSize)", n, pool.Quantum, MaxChunkSize)
		}
	}
	return nil
}

func checkChunkSize(n int) error {
	if n <= 0 || n%pool.Quantum != 0 || n > MaxChunkSize {
		return fmt.Errorf("chunk size %d is not a positive multiple of %d (256 KiB) up to %d (MaxChunkSize, 64 MiB)", n, pool.Quantum, MaxChunkSize)
	}
	return nil
}
