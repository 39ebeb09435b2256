//go:build unix

package proxycmd

import (
	"os"
	"syscall"
)

// PollableStdio returns standard input and output as files that Go's
// network poller waits on, when each is a pipe or a socket of its own: a
// read then parks a goroutine instead of holding a thread in a blocking
// read(2), and the proxy reads and writes them by raw system calls
// (internal/rawio), which saves thread wake-ups on every message (measured
// in docs/PERFORMANCE.md). restore puts the descriptors back in blocking
// mode; call it before exiting, since their open file descriptions may
// outlive the process.
//
// A stream is left alone (os.Stdin, os.Stdout) when it is a terminal or a
// file, or when it is the same file as another standard stream (one socket
// both ways, or 2>&1 into the pipe): non-blocking mode belongs to the shared
// description, and os.Stderr writes in blocking mode.
func PollableStdio() (stdin, stdout *os.File, restore func()) {
	var st [3]syscall.Stat_t
	var ok [3]bool
	for fd := range st {
		ok[fd] = syscall.Fstat(fd, &st[fd]) == nil
	}
	own := func(fd int) bool {
		if !ok[fd] {
			return false
		}
		if m := st[fd].Mode & syscall.S_IFMT; m != syscall.S_IFIFO && m != syscall.S_IFSOCK {
			return false
		}
		for other := range st {
			if other != fd && ok[other] && st[other].Dev == st[fd].Dev && st[other].Ino == st[fd].Ino {
				return false
			}
		}
		return true
	}
	var undo []int
	pollable := func(fd int, std *os.File, name string) *os.File {
		if !own(fd) || syscall.SetNonblock(fd, true) != nil {
			return std
		}
		undo = append(undo, fd)
		return os.NewFile(uintptr(fd), name) // non-blocking now: in the poller
	}
	stdin = pollable(0, os.Stdin, "/dev/stdin")
	stdout = pollable(1, os.Stdout, "/dev/stdout")
	return stdin, stdout, func() {
		for _, fd := range undo {
			syscall.SetNonblock(fd, false)
		}
	}
}
