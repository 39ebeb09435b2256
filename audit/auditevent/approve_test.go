package auditevent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
)

// events reads the events of the log at path.
func events(t *testing.T, path string) []*audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*audit.Event
	if err := audit.Scan(f, func(r audit.Record) error {
		out = append(out, r.Event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManualApproval records what approve records: a lock that cannot be
// used, a refused stale approval, and an approval before its lock, and
// none when the lock changed since it was read.
func TestManualApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snapOf := func(desc string) *digest.Snapshot {
		return &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
			Tools: []json.RawMessage{json.RawMessage(`{"name":"t","description":"` + desc + `","inputSchema":{"type":"object"}}`)}}
	}
	tests := []struct {
		name         string
		do           func(t *testing.T, path, log string, held *pin.Lock) error
		wantErr      error
		wantEvent    audit.Kind
		wantFindings []string
		wantLock     evidence.Method // the lock's method after
	}{
		{name: "lock read", do: func(t *testing.T, path, log string, held *pin.Lock) error {
			l, err := auditevent.ReadLock(ctx, path, log)
			if err == nil && l.LockDigest != held.LockDigest {
				t.Errorf("read %s, want %s", l.LockDigest, held.LockDigest)
			}
			return err
		}, wantLock: pin.MethodTOFU},
		{name: "lock modified", do: func(t *testing.T, path, log string, _ *pin.Lock) error {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Replace(data, []byte(`"tofu"`), []byte(`"manual"`), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = auditevent.ReadLock(ctx, path, log)
			return err
		}, wantErr: pin.ErrModified, wantEvent: audit.LockRefused, wantFindings: []string{pin.RuleLockModified}},
		{name: "stale", do: func(t *testing.T, path, log string, held *pin.Lock) error {
			c, err := pin.NewChange(held, snapOf("new"))
			if err != nil {
				t.Fatal(err)
			}
			stale := c.Stale(map[digest.Kind]string{digest.KindTool: "sha256:1111111111111111111111111111111111111111111111111111111111111111"}, nil)
			return auditevent.RefuseStale(ctx, log, held, snapOf("new"), stale)
		}, wantEvent: audit.LockRefused, wantFindings: []string{auditevent.FindingExpectMismatch + " tools"}, wantLock: pin.MethodTOFU},
		{name: "approved", do: func(t *testing.T, path, log string, held *pin.Lock) error {
			next, err := auditevent.ApproveManual(ctx, path, log, held, snapOf("new"), pin.Approval{Reason: "reviewed", Approver: "alice"})
			if err == nil && next.AuditHead == "" {
				t.Error("the approved lock records no audit head")
			}
			return err
		}, wantEvent: audit.Approved, wantLock: pin.MethodManual},
		{name: "lock changed", do: func(t *testing.T, path, log string, held *pin.Lock) error {
			other := *held
			other.LockDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
			_, err := auditevent.ApproveManual(ctx, path, log, &other, snapOf("new"), pin.Approval{Reason: "reviewed", Approver: "alice"})
			return err
		}, wantErr: pin.ErrLockChanged, wantLock: pin.MethodTOFU},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, log := filepath.Join(dir, "n.mcpsign.lock"), filepath.Join(dir, "audit.jsonl")
			held, err := pin.NewLock(snapOf("old"), pin.Approval{Method: pin.MethodTOFU})
			if err != nil {
				t.Fatal(err)
			}
			if err := auditevent.WriteLock(ctx, path, held, false, ""); err != nil {
				t.Fatal(err)
			}
			if err := tt.do(t, path, log, held); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if l, err := pin.Read(path); tt.wantLock != "" && (err != nil || l.Approval.Method != tt.wantLock) {
				t.Fatalf("lock after: %+v, %v; want method %s", l, err, tt.wantLock)
			}
			if tt.wantEvent == "" {
				if _, err := os.Stat(log); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a log written: %v", err)
				}
				return
			}
			ev := events(t, log)
			if len(ev) != 1 || ev[0].Event != tt.wantEvent || tt.wantFindings != nil && !slices.Equal(ev[0].Findings, tt.wantFindings) {
				t.Fatalf("events %+v, want one %s with %v", ev, tt.wantEvent, tt.wantFindings)
			}
		})
	}
}
