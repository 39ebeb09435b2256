//go:build linux

package source

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

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
	snap, err := Load(ctx, Spec{Command: fixtures.WithSetsidChild(t, dir, []string{fixtures.BuildExampleServerNoRace(t)})}, opts)
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
