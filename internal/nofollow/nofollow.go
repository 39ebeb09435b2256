// Package nofollow opens files without following a symbolic link in their
// last path element: O_NOFOLLOW where the OS has it, an Lstat check
// elsewhere. The audit log and its file-lock sidecar are opened through it
// (docs/AUDIT.md "File"), so that a link planted in their place, even a
// dangling one, is refused rather than written through.
package nofollow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrSymlink is the error of Open when the path is a symbolic link.
var ErrSymlink = errors.New("is a symbolic link (not followed)")

// ErrNotRegular is the error of Open when the path is not a regular file:
// a FIFO (whose open or read would wait for a writer for ever), a device,
// a socket or a directory.
var ErrNotRegular = errors.New("is not a regular file")

// NotRegularError is a path that is not a regular file, saying what it is:
// "notes is a directory, not a regular file". It is ErrNotRegular
// (errors.Is).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	what := ""
	switch t := e.Mode.Type(); {
	case t&fs.ModeDir != 0:
		what = "a directory"
	case t&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	case t&fs.ModeDevice != 0, t&fs.ModeCharDevice != 0:
		what = "a device"
	case t&fs.ModeSymlink != 0:
		what = "a symbolic link"
	default:
		return e.Path + " " + ErrNotRegular.Error()
	}
	return e.Path + " is " + what + ", not a regular file"
}

// Is reports whether target is ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// Open is os.OpenFile that refuses a path whose last element is a symbolic
// link, dangling or not, with an error naming the path and wrapping
// ErrSymlink, and one that is not a regular file (ErrNotRegular), without
// waiting on it: a FIFO is opened non-blocking, then refused.
func Open(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, symlinkError(path)
	}
	f, err := openNoFollow(path, flag, perm)
	if err != nil {
		// O_NOFOLLOW reports a link as ELOOP: say what it is.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, symlinkError(path)
		}
		return nil, err
	}
	// What was opened, not what Lstat saw: the path may have changed.
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if err == nil {
		err = blocking(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Check reports, without opening it, whether path is a symbolic link (an
// error wrapping ErrSymlink); a missing path is not an error.
func Check(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return symlinkError(path)
	}
	return nil
}

func symlinkError(path string) error {
	return fmt.Errorf("%s %w", path, ErrSymlink)
}
