//go:build linux

package proxy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestSessionEndStopsSetsidChild: a child that the server put in a session
// of its own (out of its process group) does not outlive the proxy's
// session, not even as a zombie. Not in parallel: a setsid orphan that the
// server's tree did not see before it was re-parented to this process is
// left to the last of the servers running beside it to stop (proctree's
// package documentation), which, beside the parallel tests, is another
// test's server.
func TestSessionEndStopsSetsidChild(t *testing.T) {
	ctx := testContext(t)
	lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	dir := t.TempDir()
	argv := fixtures.WithSetsidChild(t, dir, exampleArgv(t, fixtures.ModeHonest))
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, func(o *Options) { o.ShutdownGrace = 500 * time.Millisecond })
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "setsid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	proc := "/proc/" + strconv.Itoa(pid)
	if _, err := os.Stat(proc); err != nil {
		t.Fatalf("the setsid child %d is not running during the session", pid)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("session: %v", err)
	}
	if _, err := os.Stat(proc); err == nil {
		stat, _ := os.ReadFile(proc + "/stat")
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the setsid child %d is still there after the session: %s", pid, stat)
	}
}
