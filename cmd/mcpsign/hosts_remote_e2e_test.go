package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestHostsRemoteEntryBridged: a VS Code remote entry (type http, its URL
// and an Authorization header from ${env:TOKEN}) wrapped by 'hosts wrap'
// and launched as VS Code launches it (command and args from the file, the
// host's environment) reaches a go-sdk Streamable HTTP server through the
// proxy: the server sees the header mcpsign filled in, the client the
// server's tools, and the lock is pinned under the policy; list --check
// reports it enforced, and unwrap gives back the file. It needs the proxy's
// Streamable HTTP upstream (mcpsign proxy -- URL) and skips without it.
func TestHostsRemoteEntryBridged(t *testing.T) {
	if _, out, _ := runCLI(t, "proxy", "--help"); !strings.Contains(out, "--header") {
		t.Skip("this mcpsign's proxy has no Streamable HTTP upstream (--header)")
	}
	const secret = "remote-test-token"
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "search_notes", Description: "Search the notes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	var authorized, refused atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	mcpsign := fixtures.BuildMcpsign(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "gh.mcpsign.lock")
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"gh":{"unsigned":"tofu","lock":"gh.mcpsign.lock"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	original := `{
	"servers": {
		// a remote server
		"gh": {"type": "http", "url": "` + ts.URL + `/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
	},
}
`
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "hosts", "wrap", "--config", config, "--policy", policy, "--mcpsign", mcpsign)
	if code != 0 || !strings.Contains(out, `"gh" (servers): wrapped`) {
		t.Fatalf("hosts wrap: exit %d %s\n%s", code, stderr, out)
	}
	data, _ := os.ReadFile(config)
	std, err := hujson.Standardize(data)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Servers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(std, &cfg); err != nil {
		t.Fatal(err)
	}
	e := cfg.Servers["gh"]
	if e.Type != "stdio" || e.Command != mcpsign || strings.Contains(string(data), secret) {
		t.Fatalf("the wrapped entry:\n%s", data)
	}
	// VS Code starts a stdio server with its own environment.
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOKEN="+secret)
	errb := &fixtures.SyncBuffer{}
	cmd.Stderr = errb
	c := mcp.NewClient(&mcp.Implementation{Name: "vscode-like", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errb.String())
	}
	res, err := cs.ListTools(ctx, nil)
	cs.Close()
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "search_notes" {
		t.Fatalf("tools/list: %v %+v\n%s", err, res, errb.String())
	}
	if authorized.Load() == 0 || refused.Load() != 0 {
		t.Errorf("requests with the header %d, without %d", authorized.Load(), refused.Load())
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the proxy was not in front (no lock pinned under the policy): %v\n%s", err, errb.String())
	}
	if strings.Contains(errb.String(), secret) {
		t.Error("the proxy printed the header's value")
	}
	if code, out, _ := runCLI(t, "hosts", "list", "--config", config, "--policy", policy, "--mcpsign", mcpsign, "--check"); code != 0 ||
		!strings.Contains(out, "through the proxy, enforced") {
		t.Errorf("list --check: exit %d\n%s", code, out)
	}
	if code, _, stderr := runCLI(t, "hosts", "unwrap", "--config", config); code != 0 {
		t.Fatalf("unwrap: %d %s", code, stderr)
	}
	if got, _ := os.ReadFile(config); string(got) != original {
		t.Errorf("unwrap:\n%s\nwant\n%s", got, original)
	}
}
