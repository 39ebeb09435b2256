//go:build linux

package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/fixtures"
)

// withSetsidChild wraps argv in a shell that first starts a child in a new
// session (setsid: out of the server's process group, which signals to the
// group do not reach), records its pid in dir/setsid, then execs argv.
func withSetsidChild(t *testing.T, dir string, argv []string) []string {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command")
	}
	script := `setsid sh -c 'echo $$ > "$0/setsid"; exec sleep 300' "$1" &
while [ ! -s "$1/setsid" ]; do sleep 0.01; done; shift; exec "$@"`
	return append([]string{"/bin/sh", "-c", script, "sh", dir}, argv...)
}

// TestStdioNoSetsidSurvivor: a server's child in a session of its own is
// gone, not even a zombie, once Load has returned.
func TestStdioNoSetsidSurvivor(t *testing.T) {
	dir := t.TempDir()
	var seen, session string
	opts := Options{Progress: func(stage string, _ int) {
		if stage != "tools/list" || seen != "" {
			return
		}
		// While the server runs: the child is out of the server's group.
		b, err := os.ReadFile(filepath.Join(dir, "setsid"))
		if err != nil {
			return
		}
		seen = strings.TrimSpace(string(b))
		if stat, err := os.ReadFile("/proc/" + seen + "/stat"); err == nil {
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			session = f[3] // field 6
		}
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := Load(ctx, Spec{Command: withSetsidChild(t, dir, []string{fixtures.BuildExampleServer(t)})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkExample(t, snap, "2026-07-28")
	pid, err := strconv.Atoi(seen)
	if err != nil {
		t.Fatalf("the setsid child's pid: %q", seen)
	}
	if session != seen {
		t.Fatalf("the child %d was in session %q, not one of its own", pid, session)
	}
	if _, err := os.Stat("/proc/" + seen); err == nil {
		stat, _ := os.ReadFile("/proc/" + seen + "/stat")
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the setsid child %d is still there after Load: %s", pid, stat)
	}
}
