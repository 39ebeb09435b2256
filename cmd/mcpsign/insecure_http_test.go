package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlainHTTPRefused: every command that reads a server refuses plain
// http:// to a host that is not a loopback one, before anything is sent
// (the name is not even resolved); --allow-insecure-http allows it, but
// never with a --header or --oauth (docs/REMOTE.md "Plain http"). The rule is netguard.CheckServerURL, the hint the
// command's.
func TestPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	d := discoverySetup(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "existing.lock")
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--", d.server); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	const remote = "http://mcp.example.invalid/mcp"
	out := func(name string) string { return filepath.Join(dir, name) }
	commands := map[string][]string{
		"digest":     {"digest", remote},
		"snapshot":   {"snapshot", remote, "-o", out("s.json")},
		"pin":        {"pin", "--lock", out("p.lock"), "--tofu", remote},
		"verify-pin": {"verify-pin", remote, "--lock", lock},
		"verify":     {"verify", "key", "--key", d.alicePub, "--bundle", d.honest, remote},
		"sign":       {"sign", "key", "--key", d.alice.key, "--password-env", "PW", "-o", out("b.json"), remote},
		"approve":    {"approve", remote, "--lock", lock, "--reason", "test"},
		"proxy":      {"proxy", "--lock", lock, "--", remote},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Refused, with the flag that allows it named.
			code, stdout, stderr := runWith(t, keysEnv(), args...)
			if code != 2 || !strings.Contains(stderr, "plain http:// is allowed only to a server on a loopback host") || !strings.Contains(stderr, "--allow-insecure-http") {
				t.Fatalf("exit %d, want 2 and the plain-http refusal:\n%s%s", code, stdout, stderr)
			}
			// Allowed, it goes on (to the network, where the name does not
			// resolve; the proxy, whose client sent nothing, ends first).
			allowed := append([]string{args[0], "--allow-insecure-http"}, args[1:]...)
			if name == "verify" || name == "sign" {
				allowed = append([]string{args[0], args[1], "--allow-insecure-http"}, args[2:]...)
			}
			code, stdout, stderr = runWith(t, keysEnv(), allowed...)
			if strings.Contains(stderr, "plain http://") || (code == 0 && name != "proxy") {
				t.Fatalf("with --allow-insecure-http: exit %d:\n%s%s", code, stdout, stderr)
			}
			// A header or OAuth is refused even then.
			for _, cred := range [][]string{{"--header", "Authorization: Bearer x"}, {"--oauth", "--no-browser"}} {
				with := append(append([]string{}, allowed[:len(allowed)-len(args)+1]...), cred...)
				with = append(with, allowed[len(allowed)-len(args)+1:]...)
				if name == "verify" || name == "sign" {
					with = append(append(append([]string{}, allowed[:3]...), cred...), allowed[3:]...)
				}
				code, stdout, stderr = runWith(t, keysEnv(), with...)
				if code != 2 || !strings.Contains(stderr, "never sent over plain http://") {
					t.Errorf("%v: exit %d, want 2 and the credentials refusal:\n%s%s", cred, code, stdout, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(out("p.lock")); err == nil {
		t.Error("pin wrote a lock")
	}
}
