package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestWith: a second holder waits until the first releases, and a wait is
// bounded by its context.
func TestWith(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock")
	}
	path := filepath.Join(t.TempDir(), "f.lock")
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- With(context.Background(), path, "test", func() error { close(held); <-release; return nil })
	}()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	if err := With(ctx, path, "the first holder", func() error { ran = true; return nil }); !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("With while held = %v (ran %v), want a bounded wait", err, ran)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := errors.New("fn")
	if err := With(context.Background(), path, "test", func() error { return want }); err != want {
		t.Fatalf("With after release = %v", err)
	}
}
