package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestHostsWrappedEntryEnforces: a Claude Desktop entry wrapped by 'mcpsign
// hosts wrap', launched the way the host launches it (command and args from
// the file, through a real MCP client), reaches the server through the proxy
// under the policy; after the server turns into its rug pull, the same entry
// is blocked.
func TestHostsWrappedEntryEnforces(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "notes.mcpsign.lock")
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","lock":"notes.mcpsign.lock"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "claude_desktop_config.json")
	original := `{
  // the host's own comment
  "mcpServers": {
    "notes": {"command": ` + quote(server) + `, "args": ["--mode", "honest"]}
  }
}
`
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "hosts", "wrap", "--host", "claude-desktop", "--config", config, "--policy", policy, "--mcpsign-path", mcpsign); code != 0 {
		t.Fatalf("hosts wrap: exit %d %s", code, stderr)
	}

	// launch starts the entry as Claude Desktop does: argv from the file.
	launch := func(t *testing.T) (*mcp.ClientSession, *fixtures.SyncBuffer, *exec.Cmd, error) {
		t.Helper()
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		// The file is JSONC: the host strips the comment line before reading it.
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		var plain []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "//") {
				plain = append(plain, l)
			}
		}
		if err := json.Unmarshal([]byte(strings.Join(plain, "\n")), &cfg); err != nil {
			t.Fatalf("the wrapped file: %v\n%s", err, data)
		}
		e := cfg.MCPServers["notes"]
		if e.Command != mcpsign || !slices.Contains(e.Args, "--policy") {
			t.Fatalf("the entry is not wrapped: %+v", e)
		}
		cmd := exec.Command(e.Command, e.Args...)
		stderr := &fixtures.SyncBuffer{}
		cmd.Stderr = stderr
		c := mcp.NewClient(&mcp.Implementation{Name: "claude-desktop-like", Version: "0"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		return cs, stderr, cmd, err
	}

	cs, stderr, _, err := launch(t)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, fixtures.HonestToolNames()) {
		t.Errorf("tools %q", names)
	}
	cs.Close()
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("no lock was written on first use: %v\n%s", err, stderr.String())
	}

	// The server turns: the same entry, its server now in rug-pull mode.
	data, _ := os.ReadFile(config)
	turned := strings.Replace(string(data), `"honest"`, `"`+fixtures.ModeRugPull+`"`, 1)
	if turned == string(data) {
		t.Fatal("the wrapped entry lost the server's arguments")
	}
	if err := os.WriteFile(config, []byte(turned), 0o600); err != nil {
		t.Fatal(err)
	}
	cs, stderr, cmd, err := launch(t)
	if err == nil {
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
		cs.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
		t.Errorf("the rug pull was not blocked: %v\n%s", err, stderr.String())
	}
	if cs == nil {
		cmd.Process.Signal(os.Interrupt)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 42 {
		t.Errorf("proxy exit %d, want 42\n%s", code, stderr.String())
	}

	// unwrap gives back the file as the host wrote it (but for the mode).
	os.WriteFile(config, data, 0o600)
	if code, _, stderr := runCLI(t, "hosts", "unwrap", "--host", "claude-desktop", "--config", config); code != 0 {
		t.Fatalf("hosts unwrap: exit %d %s", code, stderr)
	}
	if got, _ := os.ReadFile(config); string(got) != original {
		t.Errorf("unwrap:\n%s\nwant\n%s", got, original)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestHostsLookalikeRewrapped: a project's .vscode/mcp.json whose entry runs
// a program named mcpsign that is not mcpsign (it starts the server with no
// proxy) is not enforced (list --check exits 1); wrap re-wraps it, and
// launched as VS Code launches it (command and args from the file, in the
// workspace folder), the real proxy is in front: it pins the server's
// definitions under the policy, and list --check exits 0.
func TestHostsLookalikeRewrapped(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the lookalike is a shell script")
	}
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "notes.mcpsign.lock")
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","lock":"notes.mcpsign.lock"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The lookalike: drops "proxy" and "--", runs the server unchecked.
	evil := filepath.Join(dir, "evil", "mcpsign")
	os.MkdirAll(filepath.Dir(evil), 0o755)
	if err := os.WriteFile(evil, []byte("#!/bin/sh\nshift 2\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(config), 0o755)
	original := `{
	// from a cloned repository
	"servers": {
		"notes": {"type": "stdio", "command": "./evil/mcpsign", "args": ["proxy", "--", ` + quote(server) + `, "--mode", "honest"]},
	},
}
`
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	launch := func(t *testing.T) (string, []string) {
		t.Helper()
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		std, err := hujson.Standardize(data)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Servers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(std, &cfg); err != nil {
			t.Fatal(err)
		}
		e := cfg.Servers["notes"]
		cmd := exec.Command(e.Command, e.Args...)
		cmd.Dir = dir // VS Code starts a workspace's servers in its folder
		stderr := &fixtures.SyncBuffer{}
		cmd.Stderr = stderr
		c := mcp.NewClient(&mcp.Implementation{Name: "vscode-like", Version: "0"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr.String())
		}
		defer cs.Close()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr.String())
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return e.Command, names
	}
	check := func() int {
		code, _, _ := runCLI(t, "hosts", "list", "--config", config, "--policy", policy, "--mcpsign", mcpsign, "--check")
		return code
	}

	// As the repository has it: the server runs, no proxy in front.
	if code := check(); code != 1 {
		t.Errorf("list --check on the lookalike: exit %d, want 1", code)
	}
	launch(t)
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("the lookalike wrote a lock: it is no lookalike")
	}

	code, out, stderr := runCLI(t, "hosts", "wrap", "--config", config, "--policy", policy, "--mcpsign", mcpsign)
	if code != 0 || !strings.Contains(out, `"notes" (servers): re-wrapped: its command is not this mcpsign`) {
		t.Fatalf("hosts wrap: exit %d %s\n%s", code, stderr, out)
	}
	command, names := launch(t)
	slices.Sort(names)
	if command != mcpsign || !slices.Equal(names, fixtures.HonestToolNames()) {
		t.Errorf("the wrapped entry runs %s, tools %q", command, names)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the proxy was not in front (no lock pinned under the policy): %v", err)
	}
	if code := check(); code != 0 {
		t.Errorf("list --check after wrap: exit %d, want 0", code)
	}
}
