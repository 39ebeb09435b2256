package nofollow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpen: a symbolic link, to a file or dangling, is refused with an
// error naming the path, and nothing is created through it; a plain file
// opens.
func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		f, err := Open(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), p) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%s) = %v, want ErrSymlink naming it", p, err)
		}
		if err := Check(p); !errors.Is(err, ErrSymlink) {
			t.Errorf("Check(%s) = %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a file was created through the dangling link")
	}
	f, err := Open(target, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := Check(filepath.Join(dir, "missing")); err != nil {
		t.Error(err)
	}
}
