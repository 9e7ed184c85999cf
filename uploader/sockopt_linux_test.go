package uploader_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/objup/objup/uploader"
)

// TestTCPUserTimeout: gRPC sets TCP_USER_TIMEOUT, the keepalive timeout,
// on the connections it dials itself (a *net.TCPConn), so the kernel
// gives up on a connection whose sent bytes stay unacknowledged that
// long. objup lets gRPC dial, so its connections to the service carry
// it: the keepalive timeout in milliseconds.
func TestTCPUserTimeout(t *testing.T) {
	e := newEnv(t, uploader.WithKeepalive(10*time.Second, 3*time.Second))
	if _, err := e.c.Upload(context.Background(), bucket, "x", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	srvAddr, err := net.ResolveTCPAddr("tcp", e.srv.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	found := 0
	for _, f := range fds {
		fd, err := strconv.Atoi(f.Name())
		if err != nil {
			continue
		}
		peer, err := syscall.Getpeername(fd)
		if err != nil {
			continue
		}
		p4, ok := peer.(*syscall.SockaddrInet4)
		if !ok || p4.Port != srvAddr.Port || !net.IP(p4.Addr[:]).Equal(srvAddr.IP) {
			continue
		}
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		if err != nil {
			t.Fatal(err)
		}
		if v != 3000 {
			t.Errorf("a connection to the service has TCP_USER_TIMEOUT %d ms, want 3000 (the keepalive timeout)", v)
		}
		found++
	}
	if found == 0 {
		t.Fatal("no connection to the service found")
	}
}
