package auditevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/pin"
)

// TestWriteLock writes a lock and its approval: the event first, the lock
// anchored in the log; an existing lock is kept without overwrite, and
// replaced with it, the event naming the lock before.
func TestWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, log := filepath.Join(dir, "n.mcpsign.lock"), filepath.Join(dir, "audit.jsonl")
	snap := &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}
	lock := func() *pin.Lock {
		l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := auditevent.CheckLockOutputs(path, false, log); err != nil {
		t.Fatalf("CheckLockOutputs: %v", err)
	}
	first := lock()
	if err := auditevent.WriteLock(ctx, path, first, false, log); err != nil {
		t.Fatalf("WriteLock: %v", err)
	}
	held, err := pin.Read(path)
	if err != nil || held.AuditHead == "" || held.LockDigest != first.LockDigest {
		t.Fatalf("lock %+v, %v: want it anchored in the log", held, err)
	}
	if err := auditevent.CheckLockOutputs(path, false, log); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("an existing lock: %v, want ErrExists", err)
	}
	if err := auditevent.WriteLock(ctx, path, lock(), false, log); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("WriteLock over a lock: %v, want ErrExists", err)
	}
	if err := auditevent.WriteLock(ctx, path, lock(), true, log); err != nil {
		t.Fatalf("WriteLock with overwrite: %v", err)
	}
	var events []*audit.Event
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := audit.Scan(f, func(r audit.Record) error {
		events = append(events, r.Event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := audit.Verify(log); err != nil || n != 2 || len(events) != 2 {
		t.Fatalf("log: %d events (%d scanned), %v; want 2, one per lock written", n, len(events), err)
	}
	if events[0].Event != audit.Approved || events[1].Event != audit.Approved {
		t.Fatalf("events %s, %s: want two approvals", events[0].Event, events[1].Event)
	}
}
