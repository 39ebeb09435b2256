package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestProxyAuditLog: a proxy records its first use (approved), a block
// (blocked, with the findings) and a modified lock (lock-refused); a
// session that matches the lock records nothing.
func TestProxyAuditLog(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	log := filepath.Join(dir, "audit.jsonl")
	session := func(t *testing.T, want int, args ...string) {
		t.Helper()
		s := startCLI(t, nil, append([]string{"proxy", "--lock", lock, "--audit-log", log}, args...)...)
		cs, _, err := s.client(t)
		if err == nil {
			cs.Close()
		}
		if code := s.exit(t); code != want {
			t.Fatalf("exit %d, want %d", code, want)
		}
	}
	session(t, 0, "--tofu", "--", server)
	session(t, 0, "--", server)
	session(t, proxycmd.ExitBlocked, "--", server, "--mode", fixtures.ModeRugPull)
	// The lock of the first use is anchored: its approval follows its head
	// (the empty log's), and the block after it is allowed.
	if code, out, stderr := runCLI(t, "audit", "verify", log, "--lock", lock); code != 0 || !strings.Contains(out, "reaches 1 anchor(s)") {
		t.Fatalf("audit verify --lock: exit %d %s %s", code, out, stderr)
	}
	data, _ := os.ReadFile(lock)
	if !bytes.Contains(data, []byte(`"auditHead": "`+audit.EmptyHead+`"`)) {
		t.Errorf("the first use's lock does not record the empty log's head:\n%s", data)
	}
	os.WriteFile(lock, bytes.Replace(data, []byte("Search the notes"), []byte("Search all notes"), 1), 0o644)
	if code, _, stderr := runCLI(t, "proxy", "--lock", lock, "--audit-log", log, "--", server); code != 2 || !strings.Contains(stderr, "modified") {
		t.Fatalf("modified lock: exit %d %s", code, stderr)
	}

	var kinds []string
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocked *audit.Event
	if err := audit.Scan(f, func(r audit.Record) error {
		kinds = append(kinds, string(r.Event.Event))
		if r.Event.Event == audit.Blocked {
			blocked = r.Event
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, " "); got != "approved blocked lock-refused" {
		t.Fatalf("events %q", got)
	}
	if blocked.LockBefore == "" || blocked.LockBefore != blocked.LockAfter || blocked.Sets == nil ||
		!strings.Contains(strings.Join(blocked.Findings, ","), "pin-tool-added tool/run_command") {
		t.Errorf("blocked event %+v", blocked)
	}
}
