package auditevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// TestLockOutputsWithoutLog: with no audit log nothing about one is
// checked or read; with one, a log that cannot be written is refused
// before anything is written, and the lock before is read to be recorded.
func TestLockOutputsWithoutLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "n.mcpsign.lock")
	snap := &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	if err := auditevent.WriteLock(context.Background(), path, l, false, ""); err != nil {
		t.Fatal(err)
	}
	// A directory where the log should be: not writable as a log.
	notLog := filepath.Join(dir, "log-dir")
	if err := os.Mkdir(notLog, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := auditevent.CheckLockOutputs(path, true, ""); err != nil {
		t.Errorf("no log: %v", err)
	}
	if err := auditevent.CheckLockOutputs(path, true, notLog); err == nil {
		t.Error("a log that is a directory: accepted")
	}
	if got := auditevent.LockBefore("", path); got != nil {
		t.Errorf("no log: the lock before was read (%s)", got.LockDigest)
	}
	if got := auditevent.LockBefore(filepath.Join(dir, "audit.jsonl"), path); got == nil || got.LockDigest != l.LockDigest {
		t.Errorf("with a log: lock before %v, want %s", got, l.LockDigest)
	}
	if got := auditevent.LockBefore(filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "none.lock")); got != nil {
		t.Errorf("no lock: %v", got)
	}
}

// TestRecorderResult: a failed lock write is an *UnwrittenLockError only
// once the log records the approval; a write that succeeded is no error.
func TestRecorderResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failed := errors.New("disk full")
	var rec auditevent.Recorder
	if err := rec.Result(failed); err != failed {
		t.Errorf("nothing recorded: %v, want the write's error as it is", err)
	}
	if err := rec.Result(nil); err != nil {
		t.Errorf("nothing recorded, written: %v", err)
	}
	snap := &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	rec = auditevent.Recorder{Log: filepath.Join(dir, "audit.jsonl")}
	if err := rec.Record(context.Background())(l); err != nil {
		t.Fatal(err)
	}
	if err := rec.Result(nil); err != nil {
		t.Errorf("recorded and written: %v", err)
	}
	var ue *auditevent.UnwrittenLockError
	if err := rec.Result(failed); !errors.As(err, &ue) || !errors.Is(err, failed) || ue.Lock != l.LockDigest {
		t.Errorf("recorded, not written: %v", err)
	}
}
