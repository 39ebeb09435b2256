package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/proxy"
)

// TestKeyMethodByFlags: 'verify' picks the key method from --key as pin
// and proxy do; 'verify sigstore --key' says which command takes it; a
// key-signed bundle verified without identity flags is pointed at 'verify
// key'; the proxy's failed signature says what did not match, as 'verify
// key' does, and tells the client a refused first use as such, not as
// changed definitions.
func TestKeyMethodByFlags(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	dir := t.TempDir()
	env := keysEnv()
	publisher, another := sharedKeys(t)
	snap := filepath.Join(dir, "snap.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", snap, "--", bad, "--behavior", "good"); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	bundle := filepath.Join(dir, "b.sigstore.json")
	if code, _, stderr := runSetup(t, env, "sign", "key", "--key", publisher.key, "--password-env", "PW", "-o", bundle, snap); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"verify --key", []string{"verify", snap, "--bundle", bundle, "--key", publisher.pub}, 0, "VERIFIED", ""},
		{"verify of a key-signed bundle, no identity", []string{"verify", snap, "--bundle", bundle}, 2, "",
			"the bundle " + bundle + " is signed by a key, not a certificate: verify it with 'mcpsign verify key --key PUB.pem'"},
		{"verify sigstore --key", []string{"verify", "sigstore", snap, "--bundle", bundle, "--key", publisher.pub}, 2, "",
			"--key selects the key method, not sigstore: run 'mcpsign verify key'"},
		{"verify key, another key", []string{"verify", "key", snap, "--bundle", bundle, "--key", another.pub}, 1, "its key hint", ""},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", tc.name, code, tc.code, stdout, stderr)
		}
	}

	// The proxy, first use with a bundle another key signed.
	s := startCLI(t, nil, "proxy", "--lock", filepath.Join(dir, "p.lock"), "--bundle", bundle, "--key", another.pub, "--", bad, "--behavior", "good")
	cs, _, err := s.client(t)
	if err == nil {
		_, err = cs.ListTools(context.Background(), nil)
	}
	if err == nil || !strings.Contains(err.Error(), proxy.FirstUseMessage) || strings.Contains(err.Error(), "definitions changed") {
		t.Errorf("the client was told: %v", err)
	}
	if code := s.exit(t); code != proxycmd.ExitBlocked {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"BLOCKED: first use refused", "(its key hint); --key is sha256:"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("the proxy's report lacks %q:\n%s", want, s.stderr.String())
		}
	}
	if strings.Contains(s.stderr.String(), "definitions changed") {
		t.Errorf("a refused first use reported as changed definitions:\n%s", s.stderr.String())
	}
}
