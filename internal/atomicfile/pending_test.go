package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPending(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	os.WriteFile(p, []byte("old"), 0o644)

	// Abort leaves the target and no temporary file.
	w, err := Create(p, Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half"))
	w.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("target %q after Abort", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files after Abort", len(ents))
	}

	// Commit replaces it whole; Abort after Commit does nothing.
	w, err = Create(p, Options{Overwrite: true, Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("new"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("target %q after Commit", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after Commit")
	}

	// Without Overwrite an existing target is refused, at Create and at
	// Commit (a target that appeared meanwhile).
	if _, err := Create(p, Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("Create: %v", err)
	}
	q := filepath.Join(dir, "late.json")
	w, err = Create(q, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(q, []byte("other"), 0o644)
	if err := w.Commit(); !errors.Is(err, ErrExists) {
		t.Fatalf("Commit: %v", err)
	}
	if b, _ := os.ReadFile(q); string(b) != "other" {
		t.Fatalf("late target %q", b)
	}
}
