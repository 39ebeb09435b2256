package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := Write(p, []byte("one"), Options{Perm: 0o600}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	if err := Write(p, []byte("two"), Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("want ErrExists, got %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("existing file changed: %q", b)
	}
	if err := Write(p, []byte("three"), Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "three" {
		t.Errorf("got %q", b)
	}
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x"), Options{}); err == nil {
		t.Error("want an error for a missing directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	for _, tc := range []struct {
		name string
		path string
		opts Options
		want error // nil: no error
	}{
		{"new file", filepath.Join(dir, "new"), Options{}, nil},
		{"existing", file, Options{}, ErrExists},
		{"existing, overwrite", file, Options{Overwrite: true}, nil},
		{"directory", dir, Options{Overwrite: true}, ErrIsDirectory},
		{"missing directory", filepath.Join(dir, "nope", "x"), Options{}, ErrNoDirectory},
		{"file as directory", filepath.Join(file, "x"), Options{}, ErrNoDirectory},
		{"read-only directory", filepath.Join(ro, "x"), Options{}, os.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == os.ErrPermission && os.Geteuid() == 0 {
				t.Skip("root writes anywhere")
			}
			err := Check(tc.path, tc.opts)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("Check left files behind: %v", entries)
	}
	// Write's errors name the target, never the temporary file.
	if err := Write(filepath.Join(dir, "nope", "x"), []byte("x"), Options{}); err == nil || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("Write: %v", err)
	}
}

// TestDirectory: a target that is a directory is ErrIsDirectory, not
// "file exists", with Overwrite or not, from Check and Write alike.
func TestDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, o := range []Options{{}, {Overwrite: true}} {
		if err := Write(dir, []byte("x"), o); !errors.Is(err, ErrIsDirectory) || errors.Is(err, ErrExists) {
			t.Errorf("Write(dir, %+v) = %v, want ErrIsDirectory", o, err)
		}
		if err := Check(dir, o); !errors.Is(err, ErrIsDirectory) {
			t.Errorf("Check(dir, %+v) = %v, want ErrIsDirectory", o, err)
		}
	}
}
