package uploader

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

// EmulatorEnv names the environment variable that points the client at a GCS
// emulator's gRPC endpoint (host:port), as the official client does: plaintext,
// no authentication.
const EmulatorEnv = "STORAGE_EMULATOR_HOST_GRPC"

// Client uploads objects to GCS over its gRPC API. It is safe for concurrent use;
// create one per process and share it.
type Client struct {
	conn     *grpc.ClientConn
	alloc    pool.Allocator
	inFlight int
	retry    RetryPolicy
	callOpts []grpc.CallOption
}

// NewClient dials GCS over gRPC. opts mixes the options of
// google.golang.org/api/option (option.WithCredentialsFile, option.WithEndpoint,
// option.WithGRPCConn, option.WithoutAuthentication, ...) with objup's own
// (WithPool, WithChunkSize, WithChunksInFlight, WithRetry).
//
// Without options it uses Application Default Credentials and TLS to
// storage.googleapis.com:443. When STORAGE_EMULATOR_HOST_GRPC is set (host:port),
// it dials that address in plaintext without authentication, exactly like the
// official client; options given explicitly still win. The OpenTelemetry stats
// handler that google.golang.org/api would install is left out (it costs about a
// quarter of a small upload's allocations); add your own with
// option.WithGRPCDialOption(grpc.WithStatsHandler(...)).
//
// Call Close when done.
func NewClient(ctx context.Context, opts ...option.ClientOption) (*Client, error) {
	cfg := clientConfig{inFlight: 4}
	var apiOpts []option.ClientOption
	for _, o := range opts {
		if co, ok := o.(clientOption); ok {
			co.applyClient(&cfg)
			continue
		}
		apiOpts = append(apiOpts, o)
	}
	if err := cfg.validate(); err != nil {
		return nil, &Error{Op: "NewClient", Code: invalidCode, Err: err}
	}
	if cfg.alloc == nil {
		if cfg.chunkSize == 0 || cfg.chunkSize == pool.Quantum {
			cfg.alloc = pool.Default()
		} else {
			p, err := pool.New(pool.WithBufferSize(cfg.chunkSize))
			if err != nil {
				return nil, &Error{Op: "NewClient", Code: invalidCode, Err: err}
			}
			cfg.alloc = p
		}
	}
	conn, err := gtransport.Dial(ctx, append(defaultDialOptions(), apiOpts...)...)
	if err != nil {
		return nil, newError("NewClient", "", "", fmt.Errorf("dial: %w", err))
	}
	return &Client{
		conn:     conn,
		alloc:    cfg.alloc,
		inFlight: cfg.inFlight,
		retry:    cfg.retry.withDefaults(),
		callOpts: []grpc.CallOption{
			wire.CallOption(),
			// objup retries itself, resuming sessions; gRPC's own replay
			// buffer would only hold chunk references longer.
			grpc.MaxRetryRPCBufferSize(0),
		},
	}, nil
}

func (c *clientConfig) validate() error {
	if c.alloc != nil && c.chunkSize != 0 {
		return fmt.Errorf("WithChunkSize and WithPool exclude each other: the pool's BufferSize is the chunk size")
	}
	if c.chunkSize < 0 || c.chunkSize%pool.Quantum != 0 {
		return fmt.Errorf("chunk size %d is not a positive multiple of %d (256 KiB)", c.chunkSize, pool.Quantum)
	}
	if c.alloc != nil {
		if n := c.alloc.BufferSize(); n <= 0 || n%pool.Quantum != 0 {
			return fmt.Errorf("pool buffer size %d is not a positive multiple of %d (256 KiB)", n, pool.Quantum)
		}
	}
	if c.inFlight < 1 {
		return fmt.Errorf("chunks in flight %d must be at least 1", c.inFlight)
	}
	return nil
}

// defaultDialOptions mirror the official client's: its endpoint, scopes and
// audience, or the emulator named by STORAGE_EMULATOR_HOST_GRPC.
func defaultDialOptions() []option.ClientOption {
	opts := []option.ClientOption{
		internaloption.WithDefaultEndpoint("storage.googleapis.com:443"),
		internaloption.WithDefaultEndpointTemplate("storage.UNIVERSE_DOMAIN:443"),
		internaloption.WithDefaultMTLSEndpoint("storage.mtls.googleapis.com:443"),
		internaloption.WithDefaultUniverseDomain("googleapis.com"),
		internaloption.WithDefaultAudience("https://storage.googleapis.com/"),
		internaloption.WithDefaultScopes(
			"https://www.googleapis.com/auth/cloud-platform",
			"https://www.googleapis.com/auth/devstorage.read_write",
		),
		internaloption.EnableJwtWithScope(),
		internaloption.EnableNewAuthLibrary(),
		option.WithGRPCDialOption(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32))),
		// The transport would install an OpenTelemetry stats handler on
		// the connection: about a quarter of a small upload's allocations.
		option.WithTelemetryDisabled(),
	}
	if host := os.Getenv(EmulatorEnv); host != "" {
		if i := strings.Index(host, "://"); i >= 0 {
			host = host[i+3:]
		}
		opts = append(opts,
			option.WithEndpoint(host),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
			option.WithoutAuthentication(),
		)
	}
	return opts
}

// Close closes the client's gRPC connection (also one passed with
// option.WithGRPCConn, as the official clients do). Writers still open fail.
func (c *Client) Close() error { return c.conn.Close() }

// Allocator returns the allocator the client's Writers take chunk buffers from.
func (c *Client) Allocator() pool.Allocator { return c.alloc }
