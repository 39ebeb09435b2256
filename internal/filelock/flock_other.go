//go:build !unix && !windows

package filelock

import (
	"errors"
	"os"
)

// tryLock fails closed where flock is not available: concurrent writers
// could not be made safe.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("file locking is not supported on this platform")
}

func unlock(*os.File) {}

func openLock(path string) (*os.File, error) { return openFile(path) }
