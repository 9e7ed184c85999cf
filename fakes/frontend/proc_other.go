//go:build !linux

package frontend

import "os/exec"

// dieWithParent does nothing outside Linux: a test process that dies
// without closing its front end leaves HAProxy running.
func dieWithParent(*exec.Cmd) {}
