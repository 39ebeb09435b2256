//go:build unix

package hosts

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLoadFIFO: a FIFO in place of a host's file (which any process of
// the user can make) is refused at once: reading it would wait for a
// writer for ever, and list --check with it.
func TestLoadFIFO(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Load(ctx, mustHost(t, "cursor"), p)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO loaded")
		}
	case <-ctx.Done():
		t.Fatal("Load blocks on a FIFO")
	}
}
