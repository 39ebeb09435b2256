package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestDirectoryForAFile: a directory given where a file is read is said
// to be one, not as a file mode ("(d---------)").
func TestDirectoryForAFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"hosts list --config DIR", []string{"hosts", "list", "--config", dir, "--host", "cursor"}},
		{"audit verify DIR", []string{"audit", "verify", dir}},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, dir+" is a directory, not a regular file") || strings.Contains(stderr, "d---------") {
			t.Errorf("%s: exit %d %s", tc.name, code, stderr)
		}
	}
}

// TestTrustrootShowOfAnotherFile: 'trustroot show' of a lock says what the
// file is and what to pass, not protobuf's "unknown field".
func TestTrustrootShowOfAnotherFile(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	lock := filepath.Join(t.TempDir(), "l.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, "--", bad, "--behavior", "good"); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	code, _, stderr := runCLI(t, "trustroot", "show", lock)
	if code != 2 || !strings.Contains(stderr, lock+`: not a Sigstore trusted root: it is an mcpsign lock (kind "mcpsign.lock"); a trusted root is a trusted_root.json`) ||
		strings.Contains(stderr, "proto") {
		t.Errorf("exit %d %s", code, stderr)
	}
}

// TestAuditTornLineOnce: a partial last line of an audit log is named at
// one byte offset, the one it starts at, by the writer that refuses to
// append after it and by 'audit verify'.
func TestAuditTornLineOnce(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	pin := func() (int, string) {
		code, _, stderr := runCLI(t, "pin", "--tofu", "--force", "--lock", filepath.Join(dir, "l.lock"), "--audit-log", log, "--", bad, "--behavior", "good")
		return code, stderr
	}
	if code, stderr := pin(); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	whole := mustRead(t, log)
	if err := os.WriteFile(log, append(whole, whole[:100]...), 0o644); err != nil {
		t.Fatal(err)
	}
	at := fmt.Sprintf("(byte %d)", len(whole))
	_, stderr := pin()
	_, _, verr := runCLI(t, "audit", "verify", log)
	for _, out := range []string{stderr, verr} {
		if !strings.Contains(out, at) || strings.Contains(out, fmt.Sprintf("(byte %d)", len(whole)+100)) {
			t.Errorf("the torn line is not named %s:\n%s", at, out)
		}
	}
}

// TestRegistryHintOnePrefix: a pointer 'registry hint' refuses is said
// under one prefix, naming the bundle as given (counted from 1) and the
// member, not four readers deep.
func TestRegistryHintOnePrefix(t *testing.T) {
	sj := filepath.Join(t.TempDir(), "server.json")
	if err := os.WriteFile(sj, []byte(`{"name":"io.github.acme/notes"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, digest, want string }{
		{"http://x.example/b", "sha256:" + strings.Repeat("0", 64), `: cannot write the attestation hint: bundle 1: bundleUrl "http://x.example/b" is not an https URL`},
		{"https://x.example/b", "sha256:00", `: cannot write the attestation hint: bundle 1: bundleDigest "sha256:00" is not sha256: and 64 lowercase hex digits`},
	} {
		code, _, stderr := runCLI(t, "registry", "hint", sj, "--bundle-url", tc.url, "--bundle-digest", tc.digest)
		if code != 2 || !strings.Contains(stderr, sj+tc.want) || strings.Contains(stderr, "invalid attestation pointer") || strings.Contains(stderr, "advertised attestation") {
			t.Errorf("%s %s: exit %d %s", tc.url, tc.digest, code, stderr)
		}
	}
}
