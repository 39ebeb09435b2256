package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/pin"
)

// TestAuditAnchor: each lock written with an audit log records the head
// its approval followed; audit verify --lock checks that the log reaches
// it, with the approval next, and --expect-head a head kept elsewhere.
// Cutting the log's end passes the chain but not the anchors.
func TestAuditAnchor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap, s := vtSnapshot(t, dir, "snap.json", nil)
	bundle, pub := vtSign(t, dir, "b.sigstore.json", s, nil)
	key := vtPubPEM(t, dir, pub)
	log := filepath.Join(dir, "audit.jsonl")
	lock1, lock2, lock3 := filepath.Join(dir, "one.lock"), filepath.Join(dir, "two.lock"), filepath.Join(dir, "three.lock")
	if code, out, stderr := runCLI(t, "verify", "key", snap, "--bundle", bundle, "--key", key, "--write-lock", lock1, "--audit-log", log); code != 0 {
		t.Fatalf("verify --write-lock: %d %s %s", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "pin", snap, "--tofu", "--lock", lock2, "--audit-log", log); code != 0 {
		t.Fatalf("pin --tofu: %s", stderr)
	}
	_, head, _ := runCLI(t, "audit", "verify", log)
	if code, _, stderr := runCLI(t, "pin", snap, "--lock", lock3, "--bundle", bundle, "--key", key, "--audit-log", log); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	l1, err := pin.Read(lock1)
	if err != nil || l1.AuditHead != audit.EmptyHead {
		t.Fatalf("the first lock's auditHead %q (%v), want the empty log's", l1.AuditHead, err)
	}
	l3, _ := pin.Read(lock3)
	headLine := strings.TrimPrefix(strings.Split(strings.TrimSpace(head), "\n")[1], "head: ")
	if l3.AuditHead != headLine {
		t.Fatalf("the third lock's auditHead %s, the head before it %s", l3.AuditHead, headLine)
	}
	code, out, stderr := runCLI(t, "audit", "verify", log, "--lock", lock1, "--lock", lock2, "--lock", lock3, "--expect-head", headLine)
	if code != 0 || !strings.Contains(out, "3 event(s), the chain verifies and reaches 4 anchor(s)") {
		t.Fatalf("audit verify with anchors: %d %s %s", code, out, stderr)
	}

	// A writer stopped between recording an approval and writing its lock
	// (simulated: the event of a lock replacing lock3, never written):
	// lock3 is still on disk, and the log says it was replaced.
	crashed := filepath.Join(dir, "crashed.jsonl")
	data0, _ := os.ReadFile(log)
	os.WriteFile(crashed, data0, 0o644)
	next := *l3
	next.Approval.Method = pin.MethodTOFU
	next.Approval.Identity, next.Approval.BundleDigest, next.Proof = "", "", nil
	if err := auditevent.Approve(context.Background(), crashed, audit.Approved, l3, &next); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "audit", "verify", crashed, "--lock", lock3); code != 1 || !strings.Contains(stderr, "line 4 approves a lock that replaced the lock "+lock3) {
		t.Errorf("audit verify --lock after a stopped writer: %d %s", code, stderr)
	}

	// The last event cut: the chain verifies, the anchors do not.
	data, _ := os.ReadFile(log)
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, bytes.Join(lines[:2], nil), 0o644)
	if code, _, _ := runCLI(t, "audit", "verify", cut); code != 0 {
		t.Fatal("a cut log does not verify as a chain")
	}
	for _, args := range [][]string{{"--lock", lock3}, {"--lock", lock1, "--lock", lock2, "--lock", lock3}} {
		code, _, stderr := runCLI(t, append([]string{"audit", "verify", cut}, args...)...)
		if code != 1 || !strings.Contains(stderr, "does not reach its anchor") || !strings.Contains(stderr, "three.lock") {
			t.Errorf("audit verify %v of a cut log: %d %s", args, code, stderr)
		}
	}
	os.WriteFile(cut, bytes.Join(lines[:1], nil), 0o644)
	if code, _, stderr := runCLI(t, "audit", "verify", cut, "--expect-head", headLine); code != 1 || !strings.Contains(stderr, "no line of the log") {
		t.Errorf("--expect-head of a cut log: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "audit", "verify", cut, "--expect-head", "sha256:AB"); code != 2 {
		t.Errorf("--expect-head malformed: %d %s", code, stderr)
	}
	// A lock written without a log anchors nothing: said, exit 1.
	bare := filepath.Join(dir, "bare.lock")
	runCLI(t, "pin", snap, "--tofu", "--lock", bare)
	if code, _, stderr := runCLI(t, "audit", "verify", log, "--lock", bare); code != 1 || !strings.Contains(stderr, "records no audit head") {
		t.Errorf("--lock of a lock without auditHead: %d %s", code, stderr)
	}
	// A symbolic link in the log's place is refused, naming it.
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(log, link); err == nil {
		for _, args := range [][]string{{"audit", "verify", link}, {"audit", "show", link}, {"audit", "repair", link},
			{"pin", snap, "--tofu", "--force", "--lock", lock2, "--audit-log", link}} {
			if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, link+" is a symbolic link") {
				t.Errorf("%v: %d %s", args, code, stderr)
			}
		}
	}
}

// TestOutputsCheckedFirst: a command that writes a lock and an audit log
// checks both before writing either, and a target that is a directory is
// named as one, with --force or not.
func TestOutputsCheckedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap, s := vtSnapshot(t, dir, "snap.json", nil)
	bundle, pub := vtSign(t, dir, "b.sigstore.json", s, nil)
	key := vtPubPEM(t, dir, pub)
	lock := filepath.Join(dir, "notes.lock")
	unwritable := filepath.Join(dir, "missing-dir", "a.jsonl")
	for _, args := range [][]string{
		{"pin", snap, "--tofu", "--lock", lock, "--audit-log", unwritable},
		{"verify", "key", snap, "--bundle", bundle, "--key", key, "--write-lock", lock, "--audit-log", unwritable},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "nothing written: the audit log cannot be written") || strings.Contains(stderr, "the lock was written") {
			t.Errorf("%v: exit %d %s", args[:2], code, stderr)
		}
		if _, err := os.Lstat(lock); err == nil {
			t.Fatalf("%v: the lock was written", args[:2])
		}
	}
	// approve: the lock exists, the log cannot be written: nothing changes.
	if code, _, stderr := runCLI(t, "pin", snap, "--tofu", "--lock", lock); code != 0 {
		t.Fatal(stderr)
	}
	before, _ := os.ReadFile(lock)
	code, _, stderr := runCLI(t, "approve", "--lock", lock, "--reason", "r", "--yes", "--audit-log", unwritable, snap)
	if code != 2 || !strings.Contains(stderr, "nothing written: the audit log cannot be written") {
		t.Errorf("approve: exit %d %s", code, stderr)
	}
	if after, _ := os.ReadFile(lock); !bytes.Equal(before, after) {
		t.Error("approve changed the lock")
	}

	target := t.TempDir()
	if err := os.Mkdir(filepath.Join(target, "sub.key"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		for _, args := range [][]string{
			{"pin", snap, "--tofu", "--lock", target},
			{"verify", "key", snap, "--bundle", bundle, "--key", key, "--write-lock", target},
			{"snapshot", snap, "--output", target},
			{"keygen", "--output", filepath.Join(target, "sub")}, // sub.key is a directory
		} {
			if force {
				args = append(args, "--force")
			}
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, "is a directory") || strings.Contains(stderr, "file exists") {
				t.Errorf("%v: exit %d %s", args, code, stderr)
			}
		}
	}
}
