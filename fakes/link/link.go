package link

import (
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
)

// Config describes the simulated path. The zero value is a perfect link:
// Listen and Wrap then return what they are given, unchanged.
type Config struct {
	// RTT is the round-trip time the link adds; each direction gets half.
	// A negative RTT counts as zero.
	RTT time.Duration
	// Bandwidth is the bytes per second of each connection, in each
	// direction; 0 (or less) is unlimited.
	Bandwidth int64
}

// IsZero reports whether c is the perfect link: no delay, no limit.
func (c Config) IsZero() bool { return c.RTT <= 0 && c.Bandwidth <= 0 }

// String describes c, as the flags of the fake's commands take it.
func (c Config) String() string {
	if c.IsZero() {
		return "no delay, unlimited"
	}
	bw := "unlimited"
	if c.Bandwidth > 0 {
		bw = FormatBandwidth(c.Bandwidth)
	}
	return fmt.Sprintf("RTT %v, %s per connection", max(c.RTT, 0), bw)
}

// Bounds of Config.Buffer.
const (
	minBuffer       = 4 << 20
	maxBuffer       = 256 << 20
	unlimitedBuffer = 64 << 20
)

// Buffer returns the most bytes a connection through the link holds in
// each direction: twice the bandwidth x RTT product (what is in flight on
// the path, with room for a reader that lags by a round trip), at least
// 4 MiB and at most 256 MiB; 64 MiB without a bandwidth limit. A direction
// holding that much takes no more bytes until some have been delivered:
// its writer waits, as on a TCP connection whose window is closed.
//
// Since a byte stays in the link at least half the RTT, this bounds one
// direction's rate to Buffer/(RTT/2), at least four times the bandwidth:
// the buffer never limits a connection below its bandwidth. Without a
// bandwidth limit, 64 MiB at 50 ms still passes 2.6 GB/s, more than
// loopback does.
func (c Config) Buffer() int {
	if c.Bandwidth <= 0 {
		return unlimitedBuffer
	}
	bdp := float64(c.Bandwidth) * max(c.RTT, 0).Seconds()
	return int(min(max(2*bdp, minBuffer), maxBuffer))
}

// Flow-control windows a gRPC server behind a link advertises (see
// ServerWindows).
const (
	// StreamWindow is the HTTP/2 flow-control window of each stream.
	StreamWindow = 64 << 20
	// ConnWindow is the HTTP/2 flow-control window of each connection.
	ConnWindow = 256 << 20
)

// ServerWindows returns the gRPC server options of a front end built for
// long paths, for a server behind a link of c: HTTP/2 flow-control windows
// of StreamWindow per stream and ConnWindow per connection from the start,
// so a client may have that much in flight at once. Without them, grpc-go's
// server sizes its windows by its own estimate of the path, which held an
// upload near 4 MiB per round trip through the link: what limited the
// uploads measured was then the fake's estimator, not the client or the
// path. A zero c returns none: a server on loopback keeps grpc-go's
// defaults.
func ServerWindows(c Config) []grpc.ServerOption {
	if c.IsZero() {
		return nil
	}
	return []grpc.ServerOption{grpc.InitialWindowSize(StreamWindow), grpc.InitialConnWindowSize(ConnWindow)}
}

// Listen returns a listener whose connections go through the simulated
// link (each is wrapped by Wrap). Closing it closes ln; connections already
// accepted stay open. A zero c returns ln itself.
func Listen(ln net.Listener, c Config) net.Listener {
	if c.IsZero() {
		return ln
	}
	return &listener{Listener: ln, cfg: c}
}

type listener struct {
	net.Listener
	cfg Config
}

// Accept waits for the next connection and returns it behind the link.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c, l.cfg), nil
}
