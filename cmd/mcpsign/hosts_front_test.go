package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostsWrapFront: hosts wrap --front points a remote entry at a front
// (list then says so, enforced only with --front naming it), unwrap gives
// the file back byte for byte; bad usage changes no file.
func TestHostsWrapFront(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "{\n  \"mcpServers\": {\n    \"notes\": {\"command\": \"npx\"},\n    \"web\": {\"url\": \"https://mcp.example.com/mcp?key=s3cret\", \"headers\": {\"Authorization\": \"Bearer tok3n\"}}\n  }\n}\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	const front = "https://notes-front.example.internal/mcp"
	pol := filepath.Join(home, "policy.json")
	os.WriteFile(pol, hostsPolicy(), 0o644)
	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--front", front}, "--front needs --server"},
		{[]string{"--front", front, "--server", "web", "--policy", pol}, "not both"},
		{[]string{"--front", "http://front.example/mcp", "--server", "web"}, "not loopback"},
		{[]string{"--server", "web"}, "--front URL"},
	} {
		code, _, stderr := runHosts(t, home, append([]string{"hosts", "wrap", "--config", cfg}, bad.args...)...)
		if code != 2 || !strings.Contains(stderr, bad.msg) {
			t.Errorf("wrap %q: exit %d, %s; want 2: %s", bad.args, code, stderr, bad.msg)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != orig {
		t.Fatalf("bad usage changed the file:\n%s", b)
	}

	code, out, stderr := runHosts(t, home, "hosts", "wrap", "--config", cfg, "--front", front, "--server", "web")
	if code != 0 || !strings.Contains(out, `"web" (mcpServers): wrapped`) {
		t.Fatalf("wrap --front: %d\n%s\n%s", code, out, stderr)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `"url": "`+front+`"`) || !strings.Contains(string(b), `"mcpsignUpstream": "https://mcp.example.com/mcp?key=s3cret"`) || !strings.Contains(string(b), `"command": "npx"`) {
		t.Fatalf("after wrap --front:\n%s", b)
	}
	for _, tc := range []struct {
		fronts   []string
		enforced bool
	}{{nil, false}, {[]string{front}, true}, {[]string{"https://other.example/mcp"}, false}} {
		args := []string{"hosts", "list", "--config", cfg, "--server", "web", "--format", "json"}
		for _, f := range tc.fronts {
			args = append(args, "--front", f)
		}
		_, out, _ := runHosts(t, home, args...)
		var r struct {
			Files []struct {
				Servers []struct {
					URL, Upstream     string
					Wrapped, Enforced bool
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Files) != 1 || len(r.Files[0].Servers) != 1 {
			t.Fatalf("list %q: %v\n%s", tc.fronts, err, out)
		}
		s := r.Files[0].Servers[0]
		if s.URL != front || s.Upstream != "https://mcp.example.com/mcp?key=<redacted>" || !s.Wrapped || s.Enforced != tc.enforced {
			t.Errorf("list --front %q: %+v, want enforced %v", tc.fronts, s, tc.enforced)
		}
		if strings.Contains(out, "s3cret") || strings.Contains(out, "tok3n") {
			t.Errorf("list printed a secret:\n%s", out)
		}
	}
	_, out, _ = runHosts(t, home, "hosts", "list", "--config", cfg, "--server", "web", "--front", front)
	if !strings.Contains(out, `remote "https://mcp.example.com/mcp?key=<redacted>" through the front "`+front+`", enforced`) {
		t.Errorf("list text:\n%s", out)
	}

	code, out, stderr = runHosts(t, home, "hosts", "unwrap", "--config", cfg, "--server", "web")
	if code != 0 || !strings.Contains(out, "unwrapped") {
		t.Fatalf("unwrap: %d\n%s\n%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != orig {
		t.Errorf("unwrap did not restore the file:\n%s\nwant\n%s", b, orig)
	}
}
