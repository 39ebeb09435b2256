package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
)

func TestPolicyCheckAndInit(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	p := filepath.Join(dir, "policy.json")
	if code, _, stderr := runCLI(t, "policy", "init", p); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, policy.InitTemplate()) {
		t.Fatal("init wrote something else than the template")
	}
	if code, _, stderr := runCLI(t, "policy", "init", p); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("init over an existing file: exit %d, %q; want 2 naming --force", code, stderr)
	}
	if code, _, stderr := runCLI(t, "policy", "init", "--force", p); code != 0 {
		t.Errorf("init --force: exit %d: %s", code, stderr)
	}
	// The template trusts nothing: its server is blocked, saying what to add.
	code, stdout, _ := runCLI(t, "policy", "check", p)
	if code != 1 || !strings.Contains(stdout, `server example: BLOCKED`) || !strings.Contains(stdout, `add "identities" to servers.example`) {
		t.Errorf("check of the template: exit %d\n%s", code, stdout)
	}

	newPTSigner(t, dir, "k") // k.pub.pem: policy check reads key files
	good := `{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"notes":{"identities":[{"method":"key","key":"k.pub.pem"},{"method":"sigstore","issuer":"https://i","subject":"a@example.com\u202e"}],"threshold":2,"mode":"warn"}}}`
	if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "policy", "check", p)
	for _, want := range []string{"signed by 2 of 2 distinct identities", "key " + filepath.Join(dir, "k.pub.pem"),
		"mode: warn", "lock: " + filepath.Join(dir, "state", "mcpsign", "locks", "notes.mcpsign.lock")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, stdout)
		}
	}
	if code != 0 || strings.ContainsRune(stdout, '\u202e') {
		t.Errorf("check: exit %d (stderr %q), or an unescaped server string:\n%s", code, stderr, stdout)
	}

	// Registry names, as docs/POLICY.md shows them: checked under the
	// name rule 'registry verify' reads the file with, not BLOCKED.
	registry := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{
	  "io.github.acme/*":{"repositorySigner":{"workflow":"release.yml"},"serverRequests":{"sampling":"deny"}},
	  "io.github.acme/notes":{"repositorySigner":{},"threshold":2,"identities":[{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com","subject":"https://github.com/acme/security/.github/workflows/countersign.yml@refs/heads/main"}]}}}`
	if err := os.WriteFile(p, []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "policy", "check", p)
	if code != 0 || strings.Contains(stdout, "BLOCKED") || !strings.Contains(stdout, "server io.github.acme/notes:\n  signed by 2 of 2 distinct identities") ||
		!strings.Contains(stdout, "server requests denied: sampling") {
		t.Errorf("check of registry names: exit %d (stderr %q)\n%s", code, stderr, stdout)
	}

	bad := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"mdoe":"warn"}}}`
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "policy", "check", p)
	if code != 2 || !strings.Contains(stderr, `/servers/notes: unknown member "mdoe"`) {
		t.Errorf("check of a misspelt member: exit %d, %q", code, stderr)
	}
	if after, _ := os.ReadFile(p); string(after) != bad {
		t.Error("check changed the file")
	}
}
