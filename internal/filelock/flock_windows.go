//go:build windows

package filelock

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive lock of the whole file with LockFileEx,
// without waiting (the caller retries until its deadline).
func tryLock(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, ^uint32(0), ^uint32(0), &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func unlock(f *os.File) {
	var ol windows.Overlapped
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, ^uint32(0), ^uint32(0), &ol)
}

// DirLockName is the file a directory's lock is taken on under Windows,
// where LockFileEx cannot lock a directory handle: DIR\.mcpsign-lock,
// created empty and never removed.
const DirLockName = ".mcpsign-lock"

// openLock opens what With locks: for a directory, the file DirLockName in
// it; else the file itself.
func openLock(path string) (*os.File, error) {
	if isDir(path) {
		return openFile(filepath.Join(path, DirLockName))
	}
	return openFile(path)
}
