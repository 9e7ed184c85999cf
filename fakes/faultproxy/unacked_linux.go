package faultproxy

import (
	"net"
	"syscall"
	"unsafe"
)

// unacked returns the bytes c's socket has queued and its peer has not
// acknowledged yet (SIOCOUTQ), or 0 if it cannot tell.
func unacked(c *net.TCPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	rc.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
		if errno != 0 {
			n = 0
		}
	})
	return int(n)
}
