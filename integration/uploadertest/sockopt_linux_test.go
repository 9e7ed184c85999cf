package uploadertest_test

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

	"github.com/objup/objup/uploader/experimental"
)

// TestTCPUserTimeout: gRPC sets TCP_USER_TIMEOUT, the keepalive timeout,
// on the connections it dials itself (a *net.TCPConn), so the kernel
// gives up on a connection whose sent bytes stay unacknowledged that
// long. objup lets gRPC dial, so its connections to the service carry
// it: the keepalive timeout in milliseconds.
func TestTCPUserTimeout(t *testing.T) {
	e := newEnv(t, experimental.WithKeepalive(10*time.Second, 3*time.Second))
	if _, err := e.c.Upload(context.Background(), bucket, "x", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	srvAddr, err := net.ResolveTCPAddr("tcp", e.srv.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	// gRPC sets the option once a connection is up; the pool's other
	// connections may still be coming up: they are looked at again until
	// each has it, for at most ten seconds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		found, wrong := userTimeouts(t, srvAddr)
		if found > 0 && len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the service; TCP_USER_TIMEOUT %v ms on some, want 3000 (the keepalive timeout)", found, wrong)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// userTimeouts returns how many of this process's sockets are connected to
// srv, and the TCP_USER_TIMEOUT of those that do not have 3000 ms.
func userTimeouts(t *testing.T, srv *net.TCPAddr) (found int, wrong []int) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
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
		if !ok || p4.Port != srv.Port || !net.IP(p4.Addr[:]).Equal(srv.IP) {
			continue
		}
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		if err != nil {
			continue // closed meanwhile
		}
		found++
		if v != 3000 {
			wrong = append(wrong, v)
		}
	}
	return found, wrong
}
