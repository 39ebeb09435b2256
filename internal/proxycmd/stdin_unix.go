//go:build unix

package proxycmd

import (
	"os"
	"syscall"
)

// PollableStdin returns standard input as a file that Go's network poller
// waits on, when it is a pipe or a socket of its own: a read then parks a
// goroutine instead of holding a thread in a blocking read(2), which on a
// busy session saves the runtime a thread hand-off per message (measured in
// docs/PERFORMANCE.md). restore puts the descriptor back in blocking mode;
// call it before exiting, since the open file description may outlive us.
//
// It leaves stdin alone (and returns os.Stdin) for a terminal or a file,
// and when stdout or stderr is the same file (one socket both ways), since
// non-blocking mode belongs to the shared description and os.Stdout and
// os.Stderr write in blocking mode.
func PollableStdin() (stdin *os.File, restore func()) {
	noop := func() {}
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return os.Stdin, noop
	}
	if m := st.Mode & syscall.S_IFMT; m != syscall.S_IFIFO && m != syscall.S_IFSOCK {
		return os.Stdin, noop
	}
	for _, fd := range []int{1, 2} {
		var o syscall.Stat_t
		if syscall.Fstat(fd, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino {
			return os.Stdin, noop
		}
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin, noop
	}
	f := os.NewFile(0, "/dev/stdin") // non-blocking now: registered with the poller
	return f, func() { syscall.SetNonblock(0, false) }
}
