//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without blocking; ok is false when
// another holder has it.
func tryLock(f *os.File) (ok bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// openLock opens what With locks: a directory itself (read-only: flock
// needs no write access), or a file.
func openLock(path string) (*os.File, error) {
	if isDir(path) {
		return os.Open(path)
	}
	return openFile(path)
}
