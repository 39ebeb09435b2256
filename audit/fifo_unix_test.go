//go:build unix

package audit

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotRegular: a FIFO in place of the log or its sidecar (which any
// process of the user can make) is refused at once, naming it: opening it
// would block until a writer came, and verify, repair and every writer
// would wait for ever.
func TestNotRegular(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	side := filepath.Join(dir, "side.jsonl")
	rechain(t, side, history()[:1])
	if err := syscall.Mkfifo(side+FileLockSuffix, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, named string
		calls    []string
	}{
		{fifo, fifo, []string{"Check", "Append", "Repair", "CheckWritable"}},
		{side, side + FileLockSuffix, []string{"Append", "Repair", "CheckWritable"}},
	} {
		for _, name := range tc.calls {
			done := make(chan error, 1)
			go func() {
				switch name {
				case "Check":
					_, err := Check(tc.p, CheckOptions{})
					done <- err
				case "Append":
					done <- Append(ctx, tc.p, history()[1])
				case "Repair":
					_, err := Repair(ctx, tc.p)
					done <- err
				case "CheckWritable":
					done <- CheckWritable(tc.p)
				}
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.named) {
					t.Errorf("%s(%s) = %v, want an error naming %s", name, tc.p, err, tc.named)
				}
			case <-ctx.Done():
				t.Fatalf("%s(%s) blocks on a FIFO", name, tc.p)
			}
		}
	}
}
