package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// TestVerifyHints: a failure says what did not match, and a missing flag is
// named.
func TestVerifyHints(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	dir := t.TempDir()
	snap, _ := exampleSnapshot(t, dir)
	a, b := sharedKeys(t)
	keyIDs := map[string]string{"a": a.id, "b": b.id}
	bundle := filepath.Join(dir, "b.json")
	if code, _, stderr := runSetup(t, keysEnv(), "sign", "key", "--key", a.key, "--password-env", "PW", snap, "-o", bundle); code != 0 {
		t.Fatal(stderr)
	}

	t.Run("wrong key", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "verify", "key", "--bundle", bundle, "--key", b.pub, snap)
		want := "the bundle was signed by key " + keyIDs["a"] + " (its key hint); --key is " + keyIDs["b"]
		if code != 1 || !strings.Contains(stdout, "FAILED at step signature") || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, want 1 and %q:\n%s", code, want, stdout)
		}
		code, stdout, _ = runCLI(t, "verify", "key", "--bundle", bundle, "--key", b.pub, snap, "--format", "json")
		if code != 1 || !strings.Contains(stdout, keyIDs["a"]) {
			t.Errorf("JSON: exit %d:\n%s", code, stdout)
		}
	})
	t.Run("verify bundle of a file that is not a subject", func(t *testing.T) {
		// The snapshot file is what was digested, not a subject: the
		// signature verifies, the artifact is not among the subjects.
		code, stdout, stderr := runCLI(t, "verify", "bundle", "--bundle", bundle, "--key", a.pub, "--require-tlog=false", snap)
		out := stdout + stderr
		if code != 1 || !strings.Contains(out, "step match") || !strings.Contains(out, "the artifact is not a subject of the bundle") ||
			strings.Contains(out, "changed after it was signed") || strings.Contains(out, "step signature") {
			t.Errorf("exit %d:\n%s", code, out)
		}
		code, stdout, _ = runCLI(t, "verify", "bundle", "--bundle", bundle, "--key", a.pub, "--require-tlog=false", "--format", "json", snap)
		if code != 1 || !strings.Contains(stdout, `"failedStep": "match"`) {
			t.Errorf("JSON: exit %d:\n%s", code, stdout)
		}
	})
	t.Run("a malformed bundle is reported once", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.json")
		os.WriteFile(bad, []byte(`{"mediaType":"x"}`), 0o644)
		for _, args := range [][]string{
			{"verify", "key", "--bundle", bad, "--key", a.pub, snap},
			{"pin", snap, "--lock", filepath.Join(dir, "z.lock"), "--bundle", bad, "--key", a.pub},
		} {
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 || strings.Count(stdout+stderr, "unsupported media type") != 1 || !strings.Contains(stdout, "FAILED at step bundle") || !strings.Contains(stdout, "pass --bundle") {
				t.Errorf("%s: exit %d\nstdout %s\nstderr %s", args[0], code, stdout, stderr)
			}
		}
	})
	t.Run("right key, changed signature", func(t *testing.T) {
		var b map[string]any
		data, _ := os.ReadFile(bundle)
		json.Unmarshal(data, &b)
		env := b["dsseEnvelope"].(map[string]any)
		sig := env["signatures"].([]any)[0].(map[string]any)
		s := []byte(sig["sig"].(string))
		if s[10] == 'A' {
			s[10] = 'B'
		} else {
			s[10] = 'A'
		}
		sig["sig"] = string(s)
		tampered := filepath.Join(dir, "t.json")
		out, _ := json.Marshal(b)
		os.WriteFile(tampered, out, 0o644)
		code, stdout, _ := runCLI(t, "verify", "key", "--bundle", tampered, "--key", a.pub, snap)
		if code != 1 || !strings.Contains(stdout, "the bundle names --key "+keyIDs["a"]) {
			t.Errorf("exit %d:\n%s", code, stdout)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no issuer", []string{"verify", "--bundle", bundle, "--certificate-identity", "a@example.com", snap}, "missing --certificate-oidc-issuer (or --certificate-oidc-issuer-regexp)"},
		{"no identity", []string{"verify", "--bundle", bundle, "--certificate-oidc-issuer", "https://example.com", snap}, "missing --certificate-identity (or --certificate-identity-regexp)"},
		{"no identity, certificate", []string{"verify", "certificate", "--bundle", bundle, "--ca-roots", a.pub, snap}, "missing --certificate-subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No trusted root is looked for first: offline, with no cache,
			// the flag is still what is named.
			code, _, stderr := runCLI(t, append(tc.args, "--offline", "--tuf-cache", t.TempDir())...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q: %s", code, tc.want, stderr)
			}
			if strings.Contains(stderr, "policy") {
				t.Errorf("speaks of a policy, though none was given: %s", stderr)
			}
		})
	}

	t.Run("log not in the trusted root", func(t *testing.T) {
		rb := shareddata.Path(t, "real-bundles")
		var tr map[string]any
		data, err := os.ReadFile(filepath.Join(rb, "trusted-roots/production_trusted_root.sigstore-python.json"))
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(data, &tr)
		tr["tlogs"] = []any{}
		noLogs := filepath.Join(dir, "nologs.json")
		out, _ := json.Marshal(tr)
		os.WriteFile(noLogs, out, 0o644)
		code, stdout, _ := runCLI(t, "verify", "bundle", "--bundle", filepath.Join(rb, "conformance-happy-path-intoto-in-dsse-v3.sigstore.json"),
			"--trusted-root", noLogs,
			"--certificate-identity", "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main",
			"--certificate-oidc-issuer", "https://token.actions.githubusercontent.com", filepath.Join(rb, "artifacts/a.txt"))
		want := "the bundle's log entry is from log c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d, which the trusted root does not have (it has no transparency log)"
		if code != 1 || !strings.Contains(stdout, "FAILED at step tlog") || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, want 1 and %q:\n%s", code, want, stdout)
		}
	})
}
