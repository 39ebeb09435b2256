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

// TestCheckDirs: a directory path any of whose components is a symbolic
// link is refused, naming the first such component, below the home
// directory when the path is inside it, else below the root; a missing
// tail ends the check.
func TestCheckDirs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	realDir := filepath.Join(base, "realDir")
	if err := os.MkdirAll(filepath.Join(realDir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realDir, filepath.Join(repo, "cache")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := os.Symlink(filepath.Join(base, "nowhere"), filepath.Join(repo, "dangling")); err != nil {
		t.Fatal(err)
	}
	// A home directory that is itself a link (as /home may be): trusted.
	home := filepath.Join(base, "home")
	if err := os.Symlink(realDir, home); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, home string
		link             string // the component named; "" for no error
	}{
		{"plain directories", filepath.Join(repo, "dir"), "", ""},
		{"a missing tail", filepath.Join(repo, "dir", "a", "b"), "", ""},
		{"the directory itself a link", filepath.Join(repo, "cache"), "", filepath.Join(repo, "cache")},
		{"a link in the middle", filepath.Join(repo, "cache", "sub", "oauth"), "", filepath.Join(repo, "cache")},
		{"a dangling link", filepath.Join(repo, "dangling", "oauth"), "", filepath.Join(repo, "dangling")},
		{"below a home that is a link", filepath.Join(home, "sub"), home, ""},
		{"a link below the home", filepath.Join(base, "repo", "cache", "x"), base, filepath.Join(repo, "cache")},
		{"outside the home: from the root", filepath.Join(repo, "cache"), filepath.Join(base, "elsewhere"), filepath.Join(repo, "cache")},
		{"unclean path", filepath.Join(repo, "dir") + "/../cache/sub", "", filepath.Join(repo, "cache")},
	} {
		err := CheckDirs(tt.path, tt.home)
		if tt.link == "" {
			if err != nil {
				t.Errorf("%s: CheckDirs(%s) = %v", tt.name, tt.path, err)
			}
			continue
		}
		var le *LinkError
		if !errors.As(err, &le) || !errors.Is(err, ErrSymlink) || le.Link != tt.link || !strings.Contains(err.Error(), tt.link) {
			t.Errorf("%s: CheckDirs(%s) = %v, want a LinkError naming %s", tt.name, tt.path, err, tt.link)
		}
	}
}
