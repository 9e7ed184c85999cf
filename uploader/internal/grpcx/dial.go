package grpcx

import (
	"context"
	"crypto/tls"
	"math"
	"os"
	"strings"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// emulatorEnv names the environment variable that points the client at a
// GCS emulator's gRPC endpoint, as the official client does: host:port (or
// http://host:port) is dialled in plaintext, https://host:port with TLS,
// and neither sends credentials.
const emulatorEnv = "STORAGE_EMULATOR_HOST_GRPC"

// DialConfig is how Dial opens its connections.
type DialConfig struct {
	ConnectTimeout   time.Duration // gRPC's MinConnectTimeout
	KeepaliveOff     bool          // no keepalive pings
	KeepaliveTime    time.Duration // ping after this long without activity
	KeepaliveTimeout time.Duration // and close the connection if no answer came within this
	Pool             int           // connections in the pool, unless the options set another number
}

// Dial opens the gRPC transport to GCS (or to the emulator that
// STORAGE_EMULATOR_HOST_GRPC names) with the official client's defaults,
// cfg and opts, which win over the defaults. It returns the transport
// and the number of connections that carry data. Beside a pool of two or
// more, one more connection carries small calls.
func Dial(ctx context.Context, opts []option.ClientOption, cfg DialConfig) (xfer.Transport, int, error) {
	dial := append(defaultDialOptions(cfg.Pool), option.WithGRPCDialOption(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.DefaultConfig,
		MinConnectTimeout: cfg.ConnectTimeout,
	})))
	if !cfg.KeepaliveOff {
		dial = append(dial, option.WithGRPCDialOption(grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:    cfg.KeepaliveTime,
			Timeout: cfg.KeepaliveTimeout,
		})))
	}
	all := append(dial, opts...)
	conns, err := gtransport.DialPool(ctx, all...)
	if err != nil {
		return nil, 0, err
	}
	// A pool the caller passed (option.WithGRPCConnPool) refuses Dial: it
	// then serves small calls too.
	var lane *grpc.ClientConn
	if conns.Num() > 1 {
		if lane, err = gtransport.Dial(ctx, all...); err != nil {
			lane = nil
		}
	}
	return New(conns, lane, []grpc.CallOption{
		wire.CallOption(),
		// objup retries itself, resuming sessions; gRPC's own replay
		// buffer would only hold chunk references longer.
		grpc.MaxRetryRPCBufferSize(0),
	}), conns.Num(), nil
}

// defaultDialOptions mirror the official client's: its endpoint, scopes and
// audience, a pool of pool connections, or the emulator named by
// STORAGE_EMULATOR_HOST_GRPC.
func defaultDialOptions(pool int) []option.ClientOption {
	opts := []option.ClientOption{
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
		option.WithGRPCConnectionPool(pool),
	}
	if host := os.Getenv(emulatorEnv); host != "" {
		opts = append(opts, emulatorOptions(host)...)
	}
	return opts
}

// emulatorOptions dial the emulator at host (see emulatorEnv).
func emulatorOptions(host string) []option.ClientOption {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	switch {
	case strings.HasPrefix(host, "https://"):
		host = strings.TrimPrefix(host, "https://")
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	case strings.HasPrefix(host, "http://"):
		host = strings.TrimPrefix(host, "http://")
	}
	return []option.ClientOption{
		option.WithEndpoint(strings.TrimSuffix(host, "/")),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(creds)),
		option.WithoutAuthentication(),
	}
}

// Target returns the target the gRPC transport t dialled (such as
// "storage.googleapis.com:443", or a "dns:///" form of it), or "" if t is
// not one.
func Target(t xfer.Transport) string {
	g, ok := t.(*grpcTransport)
	if !ok || len(g.conns) == 0 {
		return ""
	}
	return g.conns[0].Target()
}
