//go:build !linux

package faultproxy

import "net"

// unacked returns 0: outside Linux the proxy cannot tell what a socket
// has not sent, and a Reset or a Cut may lose bytes forwarded just before
// it.
func unacked(*net.TCPConn) int { return 0 }
