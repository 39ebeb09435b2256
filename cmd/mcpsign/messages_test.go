package main

import (
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
