package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

// TestClientCapabilitiesFlag: --client-capabilities is announced and
// recorded by every command that reads a live server, a bad value is a
// usage error naming the flag, and the policy's clientCapabilities stand in
// for it under --policy --name.
func TestClientCapabilitiesFlag(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()

	for _, tt := range []struct {
		name, flag, want string
	}{
		{"default: the fullest profile", "", `"clientCapabilities": ` + source.DefaultClientCapabilities},
		{"none", `{}`, `"clientCapabilities": {}`},
		{"canonical form", `{ "sampling": {}, "roots": {} }`, `"clientCapabilities": {"roots":{},"sampling":{}}`},
	} {
		t.Run("snapshot "+tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "s.json")
			args := []string{"snapshot", "-o", out}
			if tt.flag != "" {
				args = append(args, "--client-capabilities", tt.flag)
			}
			if code, _, stderr := runCLI(t, append(args, "--", server)...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, _ := os.ReadFile(out)
			if !strings.Contains(string(data), tt.want) {
				t.Fatalf("snapshot lacks %s:\n%s", tt.want, data)
			}
		})
	}

	for _, cmd := range []string{"digest", "snapshot", "sign", "verify", "pin", "verify-pin", "attest", "diff"} {
		if code, stdout, _ := runCLI(t, cmd, "--help"); code != 0 || !strings.Contains(stdout, "--client-capabilities") {
			t.Errorf("%s --help: exit %d, no --client-capabilities", cmd, code)
		}
	}
	for _, cmd := range [][]string{
		{"digest"}, {"snapshot", "-o", filepath.Join(dir, "never.json")},
		{"pin", "--tofu", "--lock", filepath.Join(dir, "never.lock")}, {"verify-pin", "--lock", filepath.Join(dir, "never.lock")},
	} {
		for _, bad := range []string{`null`, `[]`, `{"roots":{},"roots":{}}`, `roots`} {
			args := append(append([]string{}, cmd...), "--client-capabilities", bad, "--", server)
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, "--client-capabilities: invalid client capabilities") {
				t.Errorf("%s --client-capabilities %s: exit %d, %s", cmd[0], bad, code, stderr)
			}
		}
	}

	// A lock pinned without roots records {}; verify-pin under the default
	// (roots) says so first and passes: the example server offers the
	// same to both.
	lock := filepath.Join(dir, "notes.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, "--client-capabilities", "{}", "--", server); code != 0 {
		t.Fatalf("pin: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(lock); !strings.Contains(string(data), `"clientCapabilities": {}`) {
		t.Fatalf("lock lacks clientCapabilities:\n%s", data)
	}
	code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--", server)
	if code != 0 || !strings.Contains(stdout, "pin-client-capabilities-differ") {
		t.Fatalf("verify-pin: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "verify-pin", "--lock", lock, "--client-capabilities", "{}", "--", server); code != 0 || strings.Contains(stdout, "pin-client-capabilities-differ") {
		t.Fatalf("verify-pin under the lock's capabilities: exit %d\n%s", code, stdout)
	}

	// The policy's clientCapabilities, and --client-capabilities refused
	// beside --policy.
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","lock":"notes.lock","clientCapabilities":{}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "verify-pin", "--policy", pol, "--name", "notes", "--", server); code != 0 || strings.Contains(stdout, "pin-client-capabilities-differ") {
		t.Fatalf("verify-pin --policy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "verify-pin", "--policy", pol, "--name", "notes", "--client-capabilities", "{}", "--", server); code != 2 || !strings.Contains(stderr, "--client-capabilities and --policy") {
		t.Fatalf("--client-capabilities with --policy: exit %d, %s", code, stderr)
	}
	lock2 := filepath.Join(dir, "policy-pinned.lock")
	if err := os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","lock":"policy-pinned.lock","clientCapabilities":{"sampling":{}}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin --policy: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(lock2); !strings.Contains(string(data), `"clientCapabilities": {"sampling":{}}`) {
		t.Fatalf("policy lock lacks the policy's clientCapabilities:\n%s", data)
	}
}

// TestVerifyMissingUnderOtherCapabilities: verify keeps a signed
// definition that is missing a failure (a statement records no client
// capabilities: docs/VERIFY.md), and says what the listing announced.
func TestVerifyMissingUnderOtherCapabilities(t *testing.T) {
	dir := t.TempDir()
	_, signed := vtSnapshot(t, dir, "signed.json", func(s *digest.Snapshot) {
		s.Tools = append(s.Tools, json.RawMessage(`{"name":"get-roots-list","inputSchema":{"type":"object"}}`))
	})
	bundle, pub := vtSign(t, dir, "b.sigstore.json", signed, nil)
	key := vtPubPEM(t, dir, pub)
	for _, tt := range []struct {
		name string
		caps json.RawMessage
		hint bool
	}{
		{"read without roots", json.RawMessage(`{}`), true},
		{"capabilities unknown (a file without them)", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live, _ := vtSnapshot(t, t.TempDir(), "live.json", func(s *digest.Snapshot) { s.ClientCapabilities = tt.caps })
			code, out, stderr := runCLI(t, "verify", "key", live, "--bundle", bundle, "--key", key)
			if code != 1 || !strings.Contains(out, "1 missing") || !strings.Contains(out, "MISSING  tool") {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			if got := strings.Contains(stderr, "hint: 1 signed definition(s) missing; the server was read announcing client capabilities {}"); got != tt.hint {
				t.Errorf("hint %v, want %v:\n%s", got, tt.hint, stderr)
			}
		})
	}
}
