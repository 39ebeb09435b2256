//go:build !unix

package proxy

import (
	"os"
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

// setProcessGroup does nothing where there are no POSIX process groups.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the server process itself: without process groups
// neither a graceful signal nor its children can be reached.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// groupAlive is false: only the server itself is tracked here.
func groupAlive(int) bool { return false }
