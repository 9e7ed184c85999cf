package frontend

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process if the test process
// dies without closing its front end.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
