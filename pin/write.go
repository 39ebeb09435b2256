package pin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// ErrExists is returned by Create when a lock file is already there.
var ErrExists = atomicfile.ErrExists

// DefaultLockWait bounds how long a writer waits for another writer's file
// lock when its context has no deadline.
const DefaultLockWait = 30 * time.Second

// Write replaces the lock file at path atomically (temporary file, fsync,
// rename) while holding an exclusive flock on the lock's directory, so that
// concurrent writers never interleave. A reader sees the old lock or the new
// one, whole, even if the process is killed mid-write.
func (l *Lock) Write(ctx context.Context, path string) error {
	data, err := l.Marshal()
	if err != nil {
		return err
	}
	return withFileLock(ctx, path, func() error {
		return atomicfile.Write(path, data, atomicfile.Options{Overwrite: true})
	})
}

// Create writes the lock file at path like Write, but only when no lock is
// there yet: otherwise it fails with ErrExists and leaves the file alone (a
// first use racing another one must then read and check the winner's lock).
func (l *Lock) Create(ctx context.Context, path string) error {
	data, err := l.Marshal()
	if err != nil {
		return err
	}
	return withFileLock(ctx, path, func() error {
		return atomicfile.Write(path, data, atomicfile.Options{})
	})
}

// Update reads, changes and writes the lock at path under its file lock:
// fn gets the current lock (nil when there is none) and returns the lock to
// write, or nil to leave the file as it is. A current lock that is unreadable
// or modified is an error and fn is not called: nothing is ever rolled
// forward from a lock that cannot be trusted.
func Update(ctx context.Context, path string, fn func(cur *Lock) (*Lock, error)) error {
	return withFileLock(ctx, path, func() error {
		cur, err := Read(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			return err
		}
		data, err := next.Marshal()
		if err != nil {
			return err
		}
		return atomicfile.Write(path, data, atomicfile.Options{Overwrite: true})
	})
}

// withFileLock runs fn holding an exclusive flock on the directory of path,
// waiting for it until ctx is done (or DefaultLockWait when ctx has no
// deadline). The directory is locked, not a sidecar file: nothing is left
// beside the lock, and the directory, unlike the lock file (replaced by a
// rename), stays one inode. Writers of different locks in one directory
// wait for each other, which costs a few milliseconds at most.
func withFileLock(ctx context.Context, path string, fn func() error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultLockWait)
		defer cancel()
	}
	lockPath := filepath.Dir(path)
	f, err := os.Open(lockPath)
	if err != nil {
		return fmt.Errorf("opening the directory %s to lock it: %w", lockPath, err)
	}
	defer f.Close()
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
			return fmt.Errorf("waiting for the file lock on %s (another mcpsign is writing a lock there): %w", lockPath, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
	defer unlock(f)
	return fn()
}
