// Package filelock serializes writers of one file across processes with an
// exclusive lock: flock(2) of a directory or a sidecar file on Unix,
// LockFileEx on Windows (where a directory's lock is a file in it,
// DirLockName), failing closed elsewhere (docs/LOCK.md "Writing a lock",
// docs/AUDIT.md "Writing").
package filelock

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mcpsign/mcpsign/internal/nofollow"
)

// DefaultWait bounds how long With waits for another holder when its
// context has no deadline.
const DefaultWait = 30 * time.Second

// With runs fn holding an exclusive flock on lockPath: a directory (opened
// read-only, so a directory the writer may not write is locked too, and no
// file is left beside what it guards), or a file (created empty with mode
// 0644 when missing, never removed: removing it would let two writers lock
// two different files). It waits for the lock until ctx is done, or
// DefaultWait when ctx has no deadline. what names the writer in the error
// of a wait that timed out ("another mcpsign is writing the lock").
func With(ctx context.Context, lockPath, what string, fn func() error) error {
	f, err := openLock(lockPath)
	if err != nil {
		return fmt.Errorf("opening the file lock %s: %w", lockPath, err)
	}
	return hold(ctx, f, lockPath, what, fn)
}

// WithFile is With on a sidecar file only: lockPath is never taken as a
// directory, and a symbolic link there, even a dangling one, is refused
// (an error wrapping nofollow.ErrSymlink), never followed (docs/AUDIT.md
// "Writing").
func WithFile(ctx context.Context, lockPath, what string, fn func() error) error {
	f, err := nofollow.Open(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening the file lock %s: %w", lockPath, err)
	}
	return hold(ctx, f, lockPath, what, fn)
}

// hold runs fn holding the lock of f, waiting for it until ctx is done,
// and closes f.
func hold(ctx context.Context, f *os.File, lockPath, what string, fn func() error) error {
	defer f.Close()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWait)
		defer cancel()
	}
	delay := time.Millisecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			return fmt.Errorf("locking %s: %w", lockPath, err)
		}
		if ok {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the file lock %s (%s): %w", lockPath, what, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
	defer unlock(f)
	return fn()
}

// openFile opens (creating it empty when missing, mode 0644) the file a
// lock is taken on.
func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
