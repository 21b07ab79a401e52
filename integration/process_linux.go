package integration

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child get SIGKILL when the test binary dies, so that a test
// run cut short (a closed pipe, a timeout) leaves no broker behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
