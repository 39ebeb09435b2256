package main

import (
	"strings"
	"testing"
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
