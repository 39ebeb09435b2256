// Package atomicfile writes files so that a reader, or a crash, never sees
// half of one: the data goes to a temporary file in the same directory,
// which is synced and then renamed over the target.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned by Write when the target exists and overwriting was
// not asked for.
var ErrExists = errors.New("file exists")

// ErrIsDirectory is returned by Check and Write when the target is a
// directory.
var ErrIsDirectory = errors.New("is a directory")

// ErrNoDirectory is returned by Check when the directory of the target does
// not exist or is not a directory.
var ErrNoDirectory = errors.New("no such directory")

// cause drops the file names of a path error (they may name the temporary
// file, which means nothing to the reader) and keeps what went wrong.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// Check reports whether Write could write path with opts, before any costly
// work that would be wasted if it could not (a transparency log entry): the
// target is not a directory, it does not exist unless opts.Overwrite, and
// its directory exists and a file can be created in it (a temporary file is
// made and removed). Write checks everything again.
func Check(path string, opts Options) error {
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s: %w", path, ErrIsDirectory)
		}
		if !opts.Overwrite {
			return fmt.Errorf("%s: %w", path, ErrExists)
		}
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: %w %s", path, ErrNoDirectory, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %w", path, dir, cause(err))
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// Options control Write.
type Options struct {
	// Perm is the mode of a new file; 0 means 0644. Keys use 0600.
	Perm fs.FileMode
	// Overwrite replaces an existing file; without it an existing target
	// is left untouched and Write returns ErrExists.
	Overwrite bool
}

// Write writes data to path atomically. On any error the target is left as
// it was and the temporary file is removed. A target that is a directory is
// ErrIsDirectory, with Overwrite or not.
func Write(path string, data []byte, opts Options) error {
	p, err := Create(path, opts)
	if err != nil {
		return err
	}
	if _, err := p.Write(data); err != nil {
		p.Abort()
		return fmt.Errorf("writing %s: %w", path, cause(err))
	}
	return p.Commit()
}
