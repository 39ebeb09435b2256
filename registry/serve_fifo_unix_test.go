//go:build unix

package registry

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLoadServedFileFIFO: a dump path that is a named pipe nobody writes
// is refused at once (read as what it holds: nothing), as every bounded
// file mcpsign reads; a reload blocked on it would hold every later
// reload and the drain for ever.
func TestLoadServedFileFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "verified.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct {
		name string
		load func() error
	}{
		{"LoadServedFile", func() error { _, err := LoadServedFile(context.Background(), fifo, Limits{}); return err }},
		{"LoadServedFiles", func() error {
			_, err := LoadServedFiles(context.Background(), []string{fifo}, Limits{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.load() }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotServable) {
					t.Errorf("%v, want a refusal", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("blocked on a named pipe with no writer")
			}
		})
	}
}
