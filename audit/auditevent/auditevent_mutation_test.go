package auditevent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// TestChanges: an approval's changes are the error findings only, a tool
// that gained capabilities (added, or pin-capability-added) with them, and
// no capability list for any other finding.
func TestChanges(t *testing.T) {
	t.Parallel()
	caps := []capability.Capability{"exec", "delete"}
	rep := &pin.Report{Findings: []pin.Finding{
		{Rule: "pin-instructions-changed", Severity: pin.SeverityInfo},
		{Rule: pin.RuleCapabilityAdded, Severity: pin.SeverityError, Kind: digest.KindTool, Key: "a", Capabilities: caps},
		{Rule: pin.RuleAdded(digest.KindTool), Severity: pin.SeverityError, Kind: digest.KindTool, Key: "b", Capabilities: caps[:1]},
		{Rule: pin.RuleAdded(digest.KindTool), Severity: pin.SeverityError, Kind: digest.KindTool, Key: "c"},
		{Rule: pin.RuleAdded(digest.KindPrompt), Severity: pin.SeverityError, Kind: digest.KindPrompt, Key: "d", Capabilities: caps},
	}}
	want := []string{"pin-capability-added tool/a: exec, delete", "pin-tool-added tool/b: exec", "pin-tool-added tool/c", "pin-prompt-added prompt/d"}
	if got := auditevent.Changes(rep); !slices.Equal(got, want) {
		t.Errorf("Changes = %q, want %q", got, want)
	}
}

// TestOfSnapshotInstructions: the Set Digests of what a server served (nil
// when a definition has none) and its Instructions Digest, "" when it sent
// no instructions.
func TestOfSnapshotInstructions(t *testing.T) {
	t.Parallel()
	ins := "use the notes tools"
	snap := &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}
	if sets, got := auditevent.OfSnapshot(snap); sets == nil || got != "" {
		t.Errorf("no instructions: %v, %q", sets, got)
	}
	snap.Instructions = &ins
	if _, got := auditevent.OfSnapshot(snap); got != digest.InstructionsDigest(ins) {
		t.Errorf("instructions: %q, want %q", got, digest.InstructionsDigest(ins))
	}
	snap.Tools = append(snap.Tools, json.RawMessage(`{"inputSchema":{}}`)) // no name: no digest
	if sets, got := auditevent.OfSnapshot(snap); sets != nil || got != digest.InstructionsDigest(ins) {
		t.Errorf("a tool without a digest: %v, %q; want no sets", sets, got)
	}
}

// TestReadLockLogUnwritable: a lock that cannot be read, recorded in a log
// that cannot be written: the error says both.
func TestReadLockLogUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, "bad.lock")
	if err := os.WriteFile(lock, []byte("not a lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "log-dir")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := auditevent.ReadLock(context.Background(), lock, logDir)
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || len(j.Unwrap()) != 2 {
		t.Fatalf("ReadLock = %v, want the lock's and the log's errors", err)
	}
	_, err = auditevent.ReadLock(context.Background(), lock, filepath.Join(dir, "audit.jsonl"))
	if _, joined := err.(interface{ Unwrap() []error }); err == nil || joined {
		t.Fatalf("ReadLock, the refusal recorded = %v, want the lock's error alone", err)
	}
}
