//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestServeReload: SIGHUP reads the lock again; a lock that no longer
// reads is said in the log and the one in force kept (sessions go on),
// a good one is taken.
func TestServeReload(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &fixtures.SyncBuffer{}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--lock", lock, "--tofu", "--", fixtures.BuildExampleServer(t)}, a)
	}()
	waitFor := func(re *regexp.Regexp) []string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if m := re.FindStringSubmatch(stderr.String()); m != nil {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in serve's stderr:\n%s", re, stderr.String())
			}
		}
	}
	base := waitFor(regexp.MustCompile(`listening on (http://[^ ]+)/mcp`))[1]
	session := func() {
		t.Helper()
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(cctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		if _, err := cs.ListTools(cctx, nil); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
	}
	session() // writes the lock (first use)
	good, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(regexp.MustCompile(`reload failed: the configuration in force is kept`))
	session() // the lock in force still serves
	if err := os.WriteFile(lock, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(regexp.MustCompile(`"msg":"reloaded`))
	session()
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not end")
	}
}
