package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
)

// TestVerifyWriteLockAuditLog: verify --write-lock records the signed
// approval, with its evidence, and --force records the lock it replaced.
func TestVerifyWriteLockAuditLog(t *testing.T) {
	dir := t.TempDir()
	snap, s := vtSnapshot(t, dir, "snap.json", nil)
	bundle, pub := vtSign(t, dir, "b.sigstore.json", s, nil)
	key := vtPubPEM(t, dir, pub)
	lock, log := filepath.Join(dir, "notes.lock"), filepath.Join(dir, "audit.jsonl")
	for _, extra := range [][]string{nil, {"--force"}} {
		args := append([]string{"verify", "key", snap, "--bundle", bundle, "--key", key, "--write-lock", lock, "--audit-log", log}, extra...)
		if code, out, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, out, stderr)
		}
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []*audit.Event
	if err := audit.Scan(f, func(r audit.Record) error { events = append(events, r.Event); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("%d events", len(events))
	}
	first, second := events[0], events[1]
	if first.Event != audit.Approved || first.LockBefore != "" || first.Evidence.Method != "key" ||
		!strings.HasPrefix(first.Evidence.Identity, "sha256:") || first.Evidence.BundleDigest == "" || first.Server.Name != "notes" {
		t.Errorf("first event %+v %+v", first, first.Evidence)
	}
	if second.LockBefore != first.LockAfter || second.Changes != nil {
		t.Errorf("second event %+v", second)
	}
}
