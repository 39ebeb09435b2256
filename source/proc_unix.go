//go:build unix

package source

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes the server the leader of a new process group, so
// that it and every child it starts can be signalled together, and so that
// a Ctrl-C at the terminal reaches mcpsign only (which then shuts the
// server down in order).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process in the group pgid.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig) // ESRCH: nobody left, which is the goal
}
