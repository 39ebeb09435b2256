//go:build unix

package nofollow

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path with O_NOFOLLOW, and O_NONBLOCK so that a FIFO
// there does not wait for a writer (Open then refuses it).
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
}

// blocking clears the O_NONBLOCK of openNoFollow on f, a regular file.
func blocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
