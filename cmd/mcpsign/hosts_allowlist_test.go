package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostsAllowlist: wrap says that the entries it changed need new
// allowlist entries; allowlist prints exactly the wrapped argv of each
// enforced server, nothing for one that is not, and each --front URL.
func TestHostsAllowlist(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, "proj", ".mcp.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "@acme/notes@1.2.0"]}, "web": {"type": "sse", "url": "https://old.example.com/sse"}}}`), 0o644)
	pol := filepath.Join(home, "policy.json")
	os.WriteFile(pol, hostsPolicy(), 0o644)
	self := fakeMcpsign(t)

	// Before wrap: nothing is enforced, so nothing is allowlisted.
	code, out, stderr := runHosts(t, home, "hosts", "allowlist", "--config", cfg, "--policy", pol, "--mcpsign", self)
	if code != 0 || strings.TrimSpace(out) != "{\n  \"allowedMcpServers\": []\n}" || !strings.Contains(stderr, `"notes"`) || !strings.Contains(stderr, "not enforced") {
		t.Fatalf("before wrap: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = runHosts(t, home, "hosts", "wrap", "--config", cfg, "--policy", pol, "--mcpsign", self, "--dry-run")
	if code != 0 || !strings.Contains(stderr, "1 entries of "+cfg+" would have another command line") {
		t.Fatalf("wrap --dry-run: exit %d %s", code, stderr)
	}
	code, _, stderr = runHosts(t, home, "hosts", "wrap", "--config", cfg, "--policy", pol, "--mcpsign", self)
	if code != 0 || strings.Count(stderr, "mcpsign hosts allowlist") != 1 || !strings.Contains(stderr, "mcpsign hosts allowlist --config "+cfg) {
		t.Fatalf("wrap: exit %d %s", code, stderr)
	}
	code, out, stderr = runHosts(t, home, "hosts", "allowlist", "--config", cfg, "--policy", pol, "--mcpsign", self, "--front", "https://mcp.example.com/notes/mcp")
	var al struct {
		AllowedMcpServers []struct {
			ServerCommand []string `json:"serverCommand"`
			ServerURL     string   `json:"serverUrl"`
		} `json:"allowedMcpServers"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &al) != nil || len(al.AllowedMcpServers) != 2 {
		t.Fatalf("allowlist: exit %d\n%s%s", code, out, stderr)
	}
	want := []string{self, "proxy", "--policy", pol, "--name", "notes", "--", "npx", "-y", "@acme/notes@1.2.0"}
	if !slices.Equal(al.AllowedMcpServers[0].ServerCommand, want) || al.AllowedMcpServers[1].ServerURL != "https://mcp.example.com/notes/mcp" {
		t.Errorf("allowlist %+v", al)
	}
	if !strings.Contains(stderr, `"web"`) {
		t.Errorf("the sse entry left out is not said: %q", stderr)
	}
	// Wrap again changes nothing, and says nothing of allowlists.
	if _, _, stderr := runHosts(t, home, "hosts", "wrap", "--config", cfg, "--policy", pol, "--mcpsign", self); strings.Contains(stderr, "allowlist") {
		t.Errorf("a wrap that changed nothing: %s", stderr)
	}
	if code, _, stderr := runHosts(t, home, "hosts", "allowlist", "--config", cfg, "--front", "https://u:hunter2@x.example.com/"); code != 2 || strings.Contains(stderr, "hunter2") || !strings.Contains(stderr, "--front") {
		t.Errorf("a front with user info: exit %d %q", code, stderr)
	}
}
