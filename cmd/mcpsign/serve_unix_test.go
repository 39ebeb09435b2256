//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
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
	srv := startServe(t, "--listen", "127.0.0.1:0", "--lock", lock, "--tofu", "--", fixtures.BuildExampleServerNoRace(t))
	base, stderr := srv.base, srv.stderr
	waitFor := func(re *regexp.Regexp) []string { t.Helper(); return srv.waitFor(t, re) }
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
	if c := srv.stop(t); c != 0 {
		t.Errorf("exit %d:\n%s", c, stderr.String())
	}
}

// TestServeGuards: serve puts the Host check, the Origin check
// (--allow-origin) and client tokens (--tokens-file) in front of /mcp, in
// that order; SIGHUP re-reads the token file, a file that does not read
// keeps the tokens in force (and says why), a good one replaces them; no
// token is ever logged.
func TestServeGuards(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	tokens := filepath.Join(dir, "tokens")
	const tokA, tokB = "tokenAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "tokenBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	if err := os.WriteFile(tokens, []byte("# clients\n"+tokA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--listen", "127.0.0.1:0", "--lock", lock, "--tofu",
		"--allow-origin", "https://agent.example.com", "--tokens-file", tokens, "--", fixtures.BuildExampleServerNoRace(t))
	base, stderr := srv.base, srv.stderr
	waitFor := func(re *regexp.Regexp) []string { t.Helper(); return srv.waitFor(t, re) }
	initialize := func(host, origin, token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			del, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
			del.Header.Set("Mcp-Session-Id", id)
			del.Header.Set("Authorization", "Bearer "+token)
			if r, err := http.DefaultClient.Do(del); err == nil {
				r.Body.Close()
			}
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, host, origin, token string
		want                      int
	}{
		{"token", "", "", tokA, 200},
		{"no token", "", "", "", 401},
		{"wrong token", "", "", tokB, 401},
		{"allowed origin", "", "https://agent.example.com", tokA, 200},
		{"other origin, before the token", "", "https://evil.example", "", 403},
		{"rebound host, before the origin", "evil.example:80", "https://agent.example.com", tokA, 403},
	} {
		if got := initialize(tc.host, tc.origin, tc.token); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	hup := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(tokens, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	waitFor(regexp.MustCompile(`client tokens in force are kept[^\n]*line 1`))
	if got := initialize("", "", tokA); got != 200 {
		t.Errorf("after a bad token file: the token in force got %d, want 200", got)
	}
	if err := os.WriteFile(tokens, []byte(tokB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	waitFor(regexp.MustCompile(`"msg":"reloaded"`))
	if a, b := initialize("", "", tokA), initialize("", "", tokB); a != 401 || b != 200 {
		t.Errorf("after a good token file: old token %d (want 401), new %d (want 200)", a, b)
	}
	if c := srv.stop(t); c != 0 {
		t.Errorf("exit %d:\n%s", c, stderr.String())
	}
	if out := stderr.String(); strings.Contains(out, tokA) || strings.Contains(out, tokB) {
		t.Errorf("a token was logged:\n%s", out)
	}
}
