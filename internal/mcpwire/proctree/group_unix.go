//go:build unix

package proctree

import (
	"os/exec"
	"syscall"
)

// setGroup makes the server the leader of a new process group, so that it
// and every child it starts can be signalled together, and so that a Ctrl-C
// at the terminal reaches mcpsign only (which then stops the server in
// order).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Terminate sends SIGTERM to every process in the group pgid.
func Terminate(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGTERM) }

// Kill sends SIGKILL to every process in the group pgid.
func Kill(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) } // ESRCH: nobody left, the goal
