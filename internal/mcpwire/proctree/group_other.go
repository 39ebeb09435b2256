//go:build !unix

package proctree

import (
	"os"
	"os/exec"
)

// setGroup does nothing where there are no POSIX process groups.
func setGroup(*exec.Cmd) {}

// Terminate kills the server process itself: without process groups neither
// a graceful signal nor its children can be reached.
func Terminate(pid int) { Kill(pid) }

// Kill kills the server process itself.
func Kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// Alive is false: only the server itself is tracked here.
func Alive(int) bool { return false }

// Members is empty: only the server itself is tracked here.
func Members(int) []int { return nil }
