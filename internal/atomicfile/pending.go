package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Pending is a file being written by streaming: it is written to a
// temporary file beside the target, and appears at the target only on
// Commit, whole. Abort (or a failed Commit) removes it; the target is left
// as it was.
type Pending struct {
	path string
	tmp  *os.File
	opts Options
	done bool
}

// Create starts writing path as Write does, for data too large to hold in
// memory: the target is refused now if it is a directory, or exists
// without opts.Overwrite. Write to it, then Commit or Abort.
func Create(path string, opts Options) (*Pending, error) {
	perm := opts.Perm
	if perm == 0 {
		perm = 0o644
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s: %w", path, ErrIsDirectory)
		}
		if !opts.Overwrite {
			return nil, fmt.Errorf("%s: %w", path, ErrExists)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, cause(err))
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("writing %s: %w", path, cause(err))
	}
	return &Pending{path: path, tmp: tmp, opts: opts}, nil
}

// Write writes to the temporary file.
func (p *Pending) Write(b []byte) (int, error) {
	if p.done {
		return 0, errors.New("atomicfile: write after Commit or Abort")
	}
	return p.tmp.Write(b)
}

// ReaderAt reads what was written so far (to copy part of it to another
// Pending before this one is aborted).
func (p *Pending) ReaderAt() io.ReaderAt { return p.tmp }

// Abort removes the temporary file; the target is not touched. It may be
// called after Commit (it then does nothing).
func (p *Pending) Abort() {
	if p.done {
		return
	}
	p.done = true
	p.tmp.Close()
	os.Remove(p.tmp.Name())
}

// Commit syncs the temporary file and moves it to the target (refusing an
// existing target unless Options.Overwrite, as Write does).
func (p *Pending) Commit() (err error) {
	if p.done {
		return errors.New("atomicfile: Commit after Commit or Abort")
	}
	defer func() {
		if err != nil {
			p.Abort() // the temporary file goes
		}
		p.done = true
	}()
	if err = p.tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", p.path, cause(err))
	}
	if err = p.tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", p.path, cause(err))
	}
	if !p.opts.Overwrite {
		if err = os.Link(p.tmp.Name(), p.path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", p.path, ErrExists)
			}
			return fmt.Errorf("writing %s: %w", p.path, cause(err))
		}
		os.Remove(p.tmp.Name())
	} else if err = os.Rename(p.tmp.Name(), p.path); err != nil {
		return fmt.Errorf("writing %s: %w", p.path, cause(err))
	}
	if d, derr := os.Open(filepath.Dir(p.path)); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
