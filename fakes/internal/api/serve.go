package api

import (
	"fmt"
	"net"
	"time"
)

// ListenAddr maps an empty host to the IPv4 loopback address.
func ListenAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// CloseGrace is how long Close waits for calls in flight before it cancels
// them.
const CloseGrace = 5 * time.Second

// DialAddr is the host:port a client dials to reach a listener: the listener's
// own address, or loopback when it listens on every interface.
func DialAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ta.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	return ta.String()
}

// TB is the part of testing.TB that the servers' NewTest functions use;
// *testing.T, *testing.B and *testing.F satisfy it. The servers take this
// interface rather than testing.TB so that programs importing them do not
// link the testing package.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// StartTest starts a server with start for a test, as the servers'
// NewTest functions do: it stops the test with tb.Fatalf if the server
// cannot start, and registers its Close with tb.Cleanup, reporting an
// error from Close with tb.Errorf. name prefixes the messages.
func StartTest[S interface{ Close() error }](tb TB, name string, start func() (S, error)) S {
	tb.Helper()
	s, err := start()
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
		var zero S
		return zero
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("%s: Close: %v", name, err)
		}
	})
	return s
}
