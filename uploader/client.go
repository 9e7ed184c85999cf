package uploader

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"sync"
	"sync/atomic"

	"github.com/objup/objup/uploader/internal/grpcx"
	"github.com/objup/objup/uploader/internal/httpx"
	"github.com/objup/objup/uploader/internal/tenant"
	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/api/option"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/admit"
	"github.com/objup/objup/uploader/internal/knob"
	"github.com/objup/objup/uploader/internal/telemetry"
)

var errClientClosed = fmt.Errorf("client is closed: %w", fs.ErrClosed)

// Client uploads objects to GCS over its gRPC API, or its JSON API when made
// WithHTTP. It is safe for concurrent use; create one per process and share
// it.
type Client struct {
	alloc       pool.Allocator
	chunkSize   int
	inFlight    int
	maxInFlight int64
	retry       retryConfig
	pools       sync.Map // chunk size -> *pool.Pool, for Writers with their own chunk size
	tel         *telemetry.Telemetry
	tr          xfer.Transport // gRPC, or the JSON API (WithHTTP)
	overHTTP    bool           // WithHTTP
	conns       int            // the connections that carry data (gRPC's pool; knob.DefaultConnectionPool for HTTP)
	tenants     *tenant.Table
	closed      atomic.Bool
	stage       *admit.Stage   // the admission of writes per bucket; nil WithoutAdmission
	bgMu        sync.Mutex     // orders background's Add with Close's Wait
	bg          sync.WaitGroup // work that outlives an upload's call: deleting temporary objects, cancelling sessions
	xml         xmlAPI         // the XML API's multipart upload, made on first use
}

// NewClient dials GCS over gRPC (or, WithHTTP, sets up the JSON API's HTTP
// client). opts mixes the options of
// google.golang.org/api/option (option.WithCredentialsFile, option.WithEndpoint,
// option.WithGRPCConn, option.WithoutAuthentication, ...) with objup's own
// (WithPool, WithChunkSize, WithRetry, WithTenantLimits, WithTelemetry, WithHTTP; the
// machinery's knobs are in package experimental).
// Invalid objup options are reported before anything is dialled.
//
// Without options it uses Application Default Credentials and TLS to
// storage.googleapis.com:443, with gRPC keepalive (see experimental.WithKeepalive). When
// STORAGE_EMULATOR_HOST_GRPC is set it dials that emulator without
// authentication, exactly like the official client (host:port or
// http://host:port in plaintext, https://host:port with TLS); options
// given explicitly still win. The OpenTelemetry stats handler that
// google.golang.org/api would install is left out (it costs about a quarter of
// a small upload's allocations); add your own with
// option.WithGRPCDialOption(grpc.WithStatsHandler(...)).
//
// Uploads share a pool of four gRPC connections
// (option.WithGRPCConnectionPool sets another size; option.WithGRPCConn
// passes one connection), and each large upload takes the connection with
// the fewest of them: a front end caps the concurrent streams of one
// connection (about 100 at GCS), so one connection would cap the uploads in
// flight. Beside a pool of two or more, small calls have a connection of
// their own. Connections open on first use.
//
// Call Close when done.
func NewClient(ctx context.Context, opts ...option.ClientOption) (*Client, error) {
	cfg := newClientConfig()
	apiOpts := cfg.apply(opts)
	if err := cfg.validate(); err != nil {
		return nil, &Error{Op: "NewClient", Code: invalidCode, Err: err}
	}
	c := &Client{
		inFlight:    cfg.knob.InFlight,
		maxInFlight: cfg.knob.MaxInFlight,
		retry:       cfg.retry,
		chunkSize:   cfg.chunkSize,
		alloc:       cfg.alloc,
	}
	if c.alloc == nil {
		c.alloc = c.poolFor(cfg.chunkSize)
	}
	l := cfg.tenantLimits
	c.tenants = tenant.NewTable(tenant.Limits{Uploads: l.Uploads, Bytes: l.Bytes, Weight: l.Weight}, c.alloc)
	tel, err := telemetry.New(cfg.telemetry, c.alloc, codeOf)
	if err != nil {
		return nil, newError("NewClient", "", "", fmt.Errorf("telemetry: %w", err))
	}
	c.tel = tel
	c.xml.apiOpts, c.xml.endpoint = apiOpts, cfg.xmlEndpoint
	if cfg.http {
		t, err := httpx.New(ctx, apiOpts)
		if err != nil {
			tel.Close()
			return nil, newError("NewClient", "", "", fmt.Errorf("HTTP transport: %w", err))
		}
		c.xml.json = t
		c.tr, c.conns, c.overHTTP = t, knob.DefaultConnectionPool, true
		c.admit(cfg)
		return c, nil
	}
	k := &cfg.knob
	tr, conns, err := grpcx.Dial(ctx, apiOpts, grpcx.DialConfig{
		ConnectTimeout:   k.ConnectTimeout,
		KeepaliveOff:     k.KeepaliveOff,
		KeepaliveTime:    k.KeepaliveTime,
		KeepaliveTimeout: k.KeepaliveTimeout,
		Pool:             knob.DefaultConnectionPool,
	})
	if err != nil {
		tel.Close()
		return nil, newError("NewClient", "", "", fmt.Errorf("dial: %w", err))
	}
	c.tr, c.conns, c.xml.grpc = tr, conns, tr
	c.admit(cfg)
	return c, nil
}

// admit puts the admission stage (unless WithoutAdmission said otherwise)
// and the tenants' write rates (TenantLimits.Writes) in front of the
// client's transport.
func (c *Client) admit(cfg clientConfig) {
	w := cfg.tenantLimits.Writes
	if !cfg.knob.NoAdmission {
		c.stage = admit.New(tenant.Of, cfg.tenantLimits.Weight, nil)
		if cfg.knob.RampSet {
			c.stage.Ramp(cfg.knob.RampFrom, cfg.knob.RampEvery)
		}
		c.tel.ObserveAdmission(c.stage)
		// The stage gives a write refused for load its turn: its retry
		// waits for that, not for a backoff too.
		c.retry.Paced = true
	}
	if c.stage == nil && w <= 0 {
		return
	}
	c.tr = admit.Transport(c.tr, c.stage, w, max(1, int(math.Ceil(w/10))))
}

// defaultWindow is the least window of an upload whose window adapts: two
// 2 MiB messages, so one is acknowledged while the next goes out.
const defaultWindow = knob.MinWindow

// startWindow is where an adaptive window starts: the official Writer's
// chunk, which it sends before it waits, so that an upload of a few tens of
// MiB does not spend its life ramping up. It is a bound, not an
// allocation: near the service, acknowledgements come back long before
// that much is in flight.
const startWindow = 16 << 20

// window is the in-flight window of an upload with chunks of size bytes:
// the least it shrinks to under a spent pool budget (at least two chunks),
// where it starts, and how far it may grow.
func (c *Client) window(size int) (floor, start, limit int64) {
	if c.inFlight > 0 {
		w := int64(c.inFlight) * int64(size)
		return w, w, w
	}
	floor = max(defaultWindow, 2*int64(size))
	limit = max(floor, c.maxInFlight)
	return floor, min(max(startWindow, floor), limit), limit
}

// poolFor returns the pool of buffers of size bytes (0: pool.Quantum) that
// the client's Writers share: pool.Default() for the quantum, else one pool
// per size, made on first use.
func (c *Client) poolFor(size int) pool.Allocator {
	if size == 0 || size == pool.Quantum {
		return pool.Default()
	}
	if p, ok := c.pools.Load(size); ok {
		return p.(*pool.Pool)
	}
	p, err := pool.New(pool.WithBufferSize(size))
	if err != nil {
		panic(fmt.Sprintf("uploader: chunk size %d passed validation: %v", size, err))
	}
	actual, _ := c.pools.LoadOrStore(size, p)
	return actual.(*pool.Pool)
}

// Close closes the client's gRPC connection (also one passed with
// option.WithGRPCConn, as the official clients do), or the JSON API
// client's idle connections. Writers still open fail, and NewWriter returns
// an error. A second Close returns nil.
//
// Close first waits for the work that uploads left running when their
// context ended: deleting a parallel upload's temporary objects and
// cancelling abandoned sessions, each bounded (see WithParallelUpload).
func (c *Client) Close() error {
	c.bgMu.Lock()
	if c.closed.Swap(true) {
		c.bgMu.Unlock()
		return nil
	}
	c.bgMu.Unlock()
	c.bg.Wait()
	c.tel.Close()
	return c.tr.Close()
}

// background runs f after the call that started it returned, until f
// ends; Close waits for it. Once Close began, f runs at once on the
// caller's goroutine (it is bounded, and the connections are closing).
func (c *Client) background(f func()) {
	c.bgMu.Lock()
	if c.closed.Load() {
		c.bgMu.Unlock()
		f()
		return
	}
	c.bg.Add(1)
	c.bgMu.Unlock()
	go func() {
		defer c.bg.Done()
		f()
	}()
}

func (c *Client) closedErr() error {
	if c.closed.Load() {
		return errClientClosed
	}
	return nil
}
