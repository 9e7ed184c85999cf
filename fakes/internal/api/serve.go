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

// TB is the part of testing.TB that [NewTest] uses; *testing.T, *testing.B
// and *testing.F satisfy it. fakes takes this interface rather than
// testing.TB so that programs importing fakes do not link the testing
// package.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}
