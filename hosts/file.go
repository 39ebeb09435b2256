package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/filelock"
	"github.com/mcpsign/mcpsign/internal/nofollow"
)

// MaxConfigBytes bounds a configuration file (Claude Code's ~/.claude.json
// keeps history and grows).
const MaxConfigBytes = 64 << 20

var (
	// ErrSymlink reports a configuration file that is a symbolic link:
	// mcpsign does not write through one (docs/HOSTS.md).
	ErrSymlink = errors.New("configuration file is a symbolic link")
	// ErrChanged reports a file that changed between reading and writing.
	ErrChanged = errors.New("configuration file changed while mcpsign was editing it")
)

// Load reads and parses the configuration file at path as h's.
func Load(ctx context.Context, h Host, path string) (*Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return Parse(h, path, data)
}

// readConfig reads the regular file at path (through a symbolic link), at
// most MaxConfigBytes. Any other file is refused without waiting on it: a
// FIFO another process put there is opened non-blocking, then refused, so
// that reading it never waits for a writer.
func readConfig(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &nofollow.NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return boundedfile.ReadAll(f, path, MaxConfigBytes, nil)
}

// Save replaces c's file with data, atomically, keeping the file's mode. It
// holds an exclusive lock on the file's directory while it checks that the
// file still holds what Load read and writes, refuses a symbolic link
// (ErrSymlink), and writes nothing when data is what the file holds.
// Before it replaces the file it writes the bytes it held to a timestamped
// backup beside it (BackupPath), with the file's mode: Unwrap is Wrap's
// exact inverse, but a host config is the user's, and one whose edits
// between the two are lost should still be at hand. It returns the
// backup's path ("" when nothing was written).
func (c *Config) Save(ctx context.Context, data []byte) (backup string, err error) {
	if bytes.Equal(data, c.data) {
		return "", nil
	}
	if _, err := Parse(c.Host, c.Path, data); err != nil {
		return "", fmt.Errorf("internal error: the edited file does not parse: %w", err)
	}
	path := c.Path
	dir := filepath.Dir(path)
	err = filelock.With(ctx, dir, "another mcpsign is editing "+path, func() error {
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w: edit the file it points to", path, ErrSymlink)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		now, err := readConfig(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(now, c.data) {
			return fmt.Errorf("%s: %w", path, ErrChanged)
		}
		for i := 0; ; i++ {
			b := BackupPath(path, time.Now(), i)
			err := atomicfile.Write(b, c.data, atomicfile.Options{Perm: fi.Mode().Perm()})
			if errors.Is(err, atomicfile.ErrExists) && i < 100 {
				continue
			}
			if err != nil {
				return fmt.Errorf("writing the backup of %s: %w", path, err)
			}
			backup = b
			break
		}
		return atomicfile.Write(path, data, atomicfile.Options{Perm: fi.Mode().Perm(), Overwrite: true})
	})
	return backup, err
}

// BackupPath is the backup Save writes of path at time t: PATH.mcpsign-
// backup-YYYYMMDDTHHMMSSZ, with "-N" added for the Nth of one second.
func BackupPath(path string, t time.Time, n int) string {
	b := path + ".mcpsign-backup-" + t.UTC().Format("20060102T150405Z")
	if n > 0 {
		b += "-" + strconv.Itoa(n)
	}
	return b
}
