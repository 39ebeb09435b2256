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
	"path/filepath"
	"strings"
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

// LinkError is a path one of whose components is a symbolic link. It is
// ErrSymlink (errors.Is).
type LinkError struct {
	// Path is the path as given, Link the component that is a link, and
	// Target what the link says (as readlink gives it; "" if unread).
	Path, Link, Target string
}

// Error names the path, the component and where it leads.
func (e *LinkError) Error() string {
	msg := e.Path + ": its component " + e.Link + " " + ErrSymlink.Error()
	if e.Target != "" {
		msg += ", to " + e.Target
	}
	return msg
}

// Is reports whether target is ErrSymlink.
func (e *LinkError) Is(target error) bool { return target == ErrSymlink }

// CheckDirs refuses a directory path any of whose components is a
// symbolic link (Lstat of each, from the first), with a *LinkError naming
// the first one, so that nothing is created or read through a link planted
// in the path (a directory in a checked-out repository). The components
// checked are those below home when the path is inside it (the home
// directory and its parents are the user's and the system's), else those
// below the root; a link directly in the root directory is the system's
// own layout (macOS's /tmp and /var) and is followed. A component that does
// not exist ends the check: the rest is made by whoever creates the
// directories, after which CheckDirs is called again. A relative path is
// taken from the working directory.
func CheckDirs(path, home string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	sep := string(filepath.Separator)
	root := filepath.VolumeName(abs) + sep
	from := root
	if home != "" {
		if h, err := filepath.Abs(home); err == nil && h != root {
			if rel, err := filepath.Rel(h, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+sep) {
				from = h
			}
		}
	}
	rel, err := filepath.Rel(from, abs)
	if err != nil || rel == "." {
		return err
	}
	cur := from
	for i, part := range strings.Split(rel, sep) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 || from == root && i == 0 {
			continue
		}
		target, _ := os.Readlink(cur)
		return &LinkError{Path: path, Link: cur, Target: target}
	}
	return nil
}
