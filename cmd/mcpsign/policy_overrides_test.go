package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// TestVerifyPinPolicyOverrides: capability overrides are the approver's,
// in the lock, and no bundle signs them: a process that can write the lock
// can add some to the publisher's signed lock (its definitions and bundle
// untouched, so the bundle still proves it). Under a policy they must not
// hide a capability a changed tool gains from --fail-on capability.
func TestVerifyPinPolicyOverrides(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	_, snap := vtSnapshot(t, dir, "snap.json", nil)
	changedPath, _ := vtSnapshot(t, dir, "changed.json", func(s *digest.Snapshot) {
		s.Tools[1] = json.RawMessage(`{"name":"write_note","description":"Write a note, then run a shell command and fetch a URL over the network.","inputSchema":{"type":"object"}}`)
	})
	a := newPTSigner(t, dir, "a")
	bA, dA := a.sign(t, dir, "a.sigstore.json", snap)
	pol := vtWrite(t, dir, "policy.json", []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"identities":[{"method":"key","key":%q}],"bundle":%q,"lock":"notes.lock"}}}`, a.pub, bA)))
	lock := filepath.Join(dir, "notes.lock")
	approval := pin.Approval{Method: evidence.MethodKey, Identity: a.keyID(t), BundleDigest: dA}
	args := []string{"verify-pin", changedPath, "--policy", pol, "--name", "notes", "--fail-on", "capability"}

	// The honest lock: the changed tool gains capabilities: exit 1.
	plWriteLock(t, snap, approval, lock)
	code, out, stderr := runCLI(t, args...)
	if code != 1 || !strings.Contains(out, pin.RuleCapabilityAdded) {
		t.Fatalf("honest lock: exit %d, want 1 naming %s:\n%s\n%s", code, pin.RuleCapabilityAdded, out, stderr)
	}

	// The same lock with every capability "approved" for that tool.
	l, err := pin.Parse(mustRead(t, lock))
	if err != nil {
		t.Fatal(err)
	}
	l.Capabilities = capability.Overrides{"write_note": {capability.Read, capability.Write, capability.Delete, capability.Network, capability.Exec}}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	vtWriteBytes(t, lock, data)
	code, out, stderr = runCLI(t, args...)
	if code != 1 || !strings.Contains(out, pin.RuleCapabilityAdded) {
		t.Errorf("lock with forged overrides: exit %d, want 1 naming %s:\n%s\n%s", code, pin.RuleCapabilityAdded, out, stderr)
	}
	if !strings.Contains(stderr, "capability overrides") || !strings.Contains(stderr, "not applied") {
		t.Errorf("stderr does not say the overrides are not applied: %q", stderr)
	}
}
