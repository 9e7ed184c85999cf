package frontend

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process if the test process
// dies without closing its front end. (Linux sends the signal when the
// thread that started the process exits; the Go runtime keeps its threads
// unless a goroutine that locked one exits, which tests do not do.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
