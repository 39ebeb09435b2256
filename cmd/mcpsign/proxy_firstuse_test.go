package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestProxyChecksLockBeforeStart: a first use that could not write its
// lock (--tofu, or --bundle) fails before the server is started and
// listed, as pin does, naming --lock.
func TestProxyChecksLockBeforeStart(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	for _, lock := range []string{
		filepath.Join(dir, "nodir", "x.lock"), // no such directory
	} {
		code, _, stderr := runCLI(t, "proxy", "--tofu", "--lock", lock, "--", "/bin/sh", "-c", `touch "$0"; exec "$1" --behavior good`, started, bad)
		if code != 2 || !strings.Contains(stderr, "--lock "+lock+": the lock of the first use cannot be written") {
			t.Errorf("%s: exit %d %s", lock, code, stderr)
		}
		if _, err := os.Stat(started); err == nil {
			t.Errorf("%s: the server was started", lock)
			os.Remove(started)
		}
	}
}
