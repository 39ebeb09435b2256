package pin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/filelock"
)

// ErrExists is returned by Create when a lock file is already there.
var ErrExists = atomicfile.ErrExists

// DefaultLockWait bounds how long a writer waits for another writer's file
// lock when its context has no deadline.
const DefaultLockWait = filelock.DefaultWait

// Write replaces the lock file at path atomically (temporary file, fsync,
// rename) while holding an exclusive flock on the lock's directory, so that
// concurrent writers never interleave. A reader sees the old lock or the new
// one, whole, even if the process is killed mid-write.
func (l *Lock) Write(ctx context.Context, path string) error {
	return l.WriteWith(ctx, path, WriteOptions{Overwrite: true})
}

// Create writes the lock file at path like Write, but only when no lock is
// there yet: otherwise it fails with ErrExists and leaves the file alone (a
// first use racing another one must then read and check the winner's lock).
func (l *Lock) Create(ctx context.Context, path string) error {
	return l.WriteWith(ctx, path, WriteOptions{})
}

// WriteOptions configure WriteWith.
type WriteOptions struct {
	// Overwrite replaces a lock that is there (Write); without it, a file
	// there is ErrExists and is left alone (Create).
	Overwrite bool
	// Before, when set, is called under the file lock, once the file may
	// be written and just before it is, with the lock to write; it may set
	// the lock's AuditHead (the lock is marshaled after it). An error
	// leaves the file as it is. The audit log records the approval here,
	// before the lock is written (docs/AUDIT.md "Writing a lock").
	Before func(l *Lock) error
}

// WriteWith writes the lock file at path as Write (o.Overwrite) or Create
// do, calling o.Before first.
func (l *Lock) WriteWith(ctx context.Context, path string, o WriteOptions) error {
	if _, err := l.Marshal(); err != nil {
		return err
	}
	return withFileLock(ctx, path, func() error {
		if !o.Overwrite {
			if _, err := os.Lstat(path); err == nil {
				return fmt.Errorf("%s: %w", path, atomicfile.ErrExists)
			}
		}
		if o.Before != nil {
			if err := o.Before(l); err != nil {
				return err
			}
		}
		data, err := l.Marshal()
		if err != nil {
			return err
		}
		return atomicfile.Write(path, data, atomicfile.Options{Overwrite: o.Overwrite})
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
	return filelock.With(ctx, filepath.Dir(path), "another mcpsign is writing a lock there", fn)
}
