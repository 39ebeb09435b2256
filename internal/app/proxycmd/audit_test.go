package proxycmd

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

func snap(t *testing.T, version string, tools ...string) *digest.Snapshot {
	t.Helper()
	s, err := digest.ParseSnapshot([]byte(`{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"notes","version":"` + version + `"},"protocolVersion":"2025-11-25",` +
		`"tools":[` + strings.Join(tools, ",") + `],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-11-29T15:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAuditPolicy: the events of the proxy's verdicts: a signed update
// rolled forward (with what changed: a new exec tool), a refused one
// blocked, a match nothing.
func TestAuditPolicy(t *testing.T) {
	read := `{"name":"read_note","description":"Read a note.","inputSchema":{"type":"object"}}`
	run := `{"name":"run_command","description":"Run a shell command.","inputSchema":{"type":"object"}}`
	dir := t.TempDir()
	lockPath, logPath := filepath.Join(dir, "mcp.lock"), filepath.Join(dir, "audit.jsonl")
	approval := pin.Approval{Method: evidence.MethodKey, Identity: "sha256:" + strings.Repeat("a", 64), BundleDigest: "sha256:" + strings.Repeat("b", 64)}
	held, err := pin.NewLock(snap(t, "1.0.0", read), approval)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Write(context.Background(), lockPath); err != nil {
		t.Fatal(err)
	}
	signs := "notes"
	verify := func(_ context.Context, s *digest.Snapshot) (pin.Verified, error) {
		return pin.Verified{Approval: approval, Server: digest.ServerInfo{Name: signs, Version: s.Server.Version}}, nil
	}
	rec := &lockRecorder{log: logPath}
	lp, err := proxy.NewLockPolicy(lockPath, proxy.LockOptions{Verify: verify, Record: rec.record()})
	if err != nil {
		t.Fatal(err)
	}
	p := auditPolicy(lp, rec, "", io.Discard)
	ctx := context.Background()
	for _, tc := range []struct {
		snap  *digest.Snapshot
		allow bool
	}{
		{snap(t, "1.0.0", read), true},
		{snap(t, "2.0.0", read, run), true},
	} {
		if d, err := p.Check(ctx, tc.snap); err != nil || d.Allow != tc.allow {
			t.Fatalf("Check: %+v %v", d, err)
		}
	}
	signs = "twofaced"
	if d, err := p.Check(ctx, snap(t, "3.0.0", read)); err != nil || d.Allow {
		t.Fatalf("Check of another server's signature: %+v %v", d, err)
	}

	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []*audit.Event
	if err := audit.Scan(f, func(r audit.Record) error { events = append(events, r.Event); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	rf, bl := events[0], events[1]
	if rf.Event != audit.RolledForward || rf.LockBefore != held.LockDigest || rf.LockAfter == held.LockDigest ||
		rf.Evidence == nil || rf.Evidence.Method != "key" || strings.Join(rf.Changes, ";") != "pin-tool-added tool/run_command: exec;pin-capability-added tool/run_command: exec" {
		t.Errorf("rolled-forward event %+v %+v", rf, rf.Evidence)
	}
	if bl.Event != audit.Blocked || bl.LockBefore != rf.LockAfter || bl.LockAfter != rf.LockAfter ||
		len(bl.Findings) == 0 || bl.Findings[0] != pin.RuleRollForwardOtherServer {
		t.Errorf("blocked event %+v", bl)
	}

	// The lock rolled forward records the head its approval followed: the
	// log reaches it, its approval next.
	rolled, err := pin.Read(lockPath)
	if err != nil || rolled.LockDigest != rf.LockAfter || rolled.AuditHead != audit.EmptyHead {
		t.Fatalf("the lock rolled forward: %v, auditHead %q", err, rolled.AuditHead)
	}
	anchor := audit.Anchor{Name: "the lock", Head: rolled.AuditHead, LockDigest: rolled.LockDigest}
	if _, err := audit.Check(logPath, audit.CheckOptions{Anchors: []audit.Anchor{anchor}}); err != nil {
		t.Fatal(err)
	}

	// An audit log that cannot be written blocks what would be approved,
	// and the lock is not written: the event comes first.
	os.WriteFile(logPath, []byte("{"), 0o644)
	signs = "notes"
	d, err := p.Check(ctx, snap(t, "4.0.0", read))
	if err != nil || d.Allow || !strings.Contains(d.Report, "audit log") {
		t.Fatalf("Check with a torn audit log: %+v %v", d, err)
	}
	if l, err := pin.Read(lockPath); err != nil || l.LockDigest != rolled.LockDigest {
		t.Fatalf("the lock changed although its approval was not recorded: %v", err)
	}
}

// TestAuditFirstUseAnchored: a proxy's first use records its approval
// before writing the lock, and the lock records the head it followed: the
// log reaches it, the approval next. Recorded once, not again by
// auditPolicy.
func TestAuditFirstUseAnchored(t *testing.T) {
	t.Parallel()
	read := `{"name":"read_note","description":"Read a note.","inputSchema":{"type":"object"}}`
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.jsonl")
	ctx := context.Background()
	var anchors []audit.Anchor
	for i, name := range []string{"one.lock", "two.lock"} {
		lockPath := filepath.Join(dir, name)
		rec := &lockRecorder{log: logPath}
		lp, err := proxy.NewLockPolicy(lockPath, proxy.LockOptions{TOFU: true, Record: rec.record()})
		if err != nil {
			t.Fatal(err)
		}
		d, err := auditPolicy(lp, rec, "", io.Discard).Check(ctx, snap(t, "1.0.0", read))
		if err != nil || !d.Allow || !d.Updated {
			t.Fatalf("first use: %+v %v", d, err)
		}
		l, err := pin.Read(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := audit.Check(logPath, audit.CheckOptions{})
		if err != nil || sum.Events != i+1 {
			t.Fatalf("the log after first use %d: %+v %v", i, sum, err)
		}
		if i == 0 && l.AuditHead != audit.EmptyHead {
			t.Errorf("the first lock's auditHead %s, want the empty log's", l.AuditHead)
		}
		anchors = append(anchors, audit.Anchor{Name: name, Head: l.AuditHead, LockDigest: l.LockDigest})
	}
	if anchors[0].Head == anchors[1].Head {
		t.Error("both locks record one head")
	}
	if _, err := audit.Check(logPath, audit.CheckOptions{Anchors: anchors}); err != nil {
		t.Fatal(err)
	}
}
