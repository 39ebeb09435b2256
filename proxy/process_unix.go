//go:build unix

package proxy

import (
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// setProcessGroup makes the server the leader of a new process group, so
// that it and every child it starts can be signalled together, and so that a
// Ctrl-C at a terminal reaches the proxy only (which then stops the server
// in order).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process in the group pgid.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig) // ESRCH: nobody left, which is the goal
}
