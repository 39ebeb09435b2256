package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestRealHostsAfterDefaultPin: a lock pinned by a default `pin --tofu`
// (the fullest client profile, docs/SNAPSHOT.md) is in force for real hosts
// announcing their own, smaller profiles: the MCP Inspector 2.12's mcpdo and
// a host on the TypeScript SDK v2 client, each through `mcpsign proxy
// --lock` in front of the official everything server, which adds tools for
// clients announcing elicitation, sampling and roots. Each holds exactly
// what the server offers its profile, a part of the lock (docs/LOCK.md: a
// client announcing fewer capabilities passes). A lock pinned under a
// narrower profile (go-sdk's) is still judged as before: a host announcing
// more is shown tools the lock lacks, and is blocked.
//
// Parallel, its rows too: each row runs mcpdo's daemon itself, as a child
// of this test binary in its process group (runMcpdo), rather than letting
// mcpdo detach one. A detached daemon is re-parented to this test binary
// once mcpdo exits (the child subreaper of internal/mcpwire/proctree, since the
// binary listed stdio servers), and proctree's stop of another test's
// server takes such an orphan, started while that server ran, for one of
// the server's descendants and stops it (the connection then vanishes).
func TestRealHostsAfterDefaultPin(t *testing.T) {
	t.Parallel() // its own temporary directory, processes and mcpdo daemons
	mcpsign := fixtures.BuildMcpsign(t)
	node, entry := fixtures.NPMServer(t, "server-everything")
	npm := fixtures.NPMDir(t)
	mcpdo := filepath.Join(npm, "node_modules", ".bin", "mcpdo")
	for _, f := range []string{mcpdo, filepath.Join(npm, "node_modules", "@modelcontextprotocol", "client", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			fixtures.MissingE2E(t, "%s is not installed (%v)", f, err)
		}
	}
	server := []string{node, entry, "stdio"}
	dir := t.TempDir()
	full := filepath.Join(dir, "default.lock")
	narrow := filepath.Join(dir, "gosdk.lock")
	// The two pins at once, each with a short shutdown grace:
	// server-everything exits only at SIGTERM.
	t.Run("pins", func(t *testing.T) {
		for name, args := range map[string][]string{
			"default":                {"pin", "--tofu", "--shutdown-grace", everythingGrace, "--lock", full, "--"},
			"under go-sdk's profile": {"pin", "--tofu", "--shutdown-grace", everythingGrace, "--lock", narrow, "--client-capabilities", `{"roots":{"listChanged":true}}`, "--"},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if code, _, stderr := runCLI(t, append(args, server...)...); code != 0 {
					t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
				}
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	tsCaps := `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}}`
	for _, tt := range []struct {
		name, client, lock string
		blocked            bool
		want               []string // tools the host holds
	}{
		{"mcpdo, default lock", "mcpdo", full, false, []string{"echo", "get-roots-list", "trigger-elicitation-request", "trigger-url-elicitation"}},
		{"TypeScript SDK v2, default lock", "ts2", full, false, []string{"echo", "get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}},
		{"mcpdo, lock under go-sdk's profile: announces more, blocked", "mcpdo", narrow, true, nil},
		{"TypeScript SDK v2, lock under go-sdk's profile: announces more, blocked", "ts2", narrow, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv := append([]string{mcpsign, "proxy", "--lock", tt.lock, "--"}, server...)
			var tools []string
			var failure string
			if tt.client == "mcpdo" {
				tools, failure = runMcpdo(t, mcpdo, argv)
			} else {
				tools, failure = runTSClient2(t, argv, tsCaps)
			}
			if tt.blocked {
				if failure == "" && !slices.Contains(tools, "trigger-elicitation-request") {
					t.Fatalf("not blocked, yet the host holds %v", tools)
				}
				if failure == "" {
					t.Fatalf("a host announcing more than the lock holds %v, unapproved tools among them", tools)
				}
				t.Logf("blocked: %s", failure)
				return
			}
			if failure != "" {
				t.Fatalf("the host failed through the proxy: %s", failure)
			}
			for _, name := range tt.want {
				if !slices.Contains(tools, name) {
					t.Errorf("the host does not hold %s: %v", name, tools)
				}
			}
		})
	}
}

// runMcpdo connects the MCP Inspector's mcpdo to argv over stdio, with its
// own daemon, catalog and home in a temporary directory (a short path: the
// daemon's socket lives there), lists the tools, and stops the daemon. It
// returns the tool names, or what failed.
//
// The daemon (mcpdod.js, beside mcpdo's entry point) is started here, a
// child of this test binary in its process group, before mcpdo runs: mcpdo
// uses the daemon it finds at its socket and detaches one of its own only
// when there is none (see TestRealHostsAfterDefaultPin for why a detached
// one may not run beside other tests).
func runMcpdo(t *testing.T, mcpdo string, argv []string) (tools []string, failure string) {
	t.Helper()
	home, err := os.MkdirTemp("", "mcpdo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	entry, err := filepath.EvalSymlinks(mcpdo)
	if err != nil {
		t.Fatal(err)
	}
	daemonDir := filepath.Join(home, "d")
	env := append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"),
		"MCP_INSPECTOR_SECRET_STORE=memory", "MCP_INSPECTOR_DAEMON_DIR="+daemonDir,
		"MCP_INSPECTOR_DAEMON_TOKEN="+rand.Text())
	run := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, mcpdo, append([]string{"--format", "json"}, args...)...)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	var daemonOut fixtures.SyncBuffer
	daemon := exec.Command(fixtures.Node(t), filepath.Join(filepath.Dir(entry), "mcpdod.js"))
	daemon.Env, daemon.Stdout, daemon.Stderr = env, &daemonOut, &daemonOut
	if err := daemon.Start(); err != nil {
		t.Fatalf("mcpdo daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = daemon.Wait(); close(exited) }()
	t.Cleanup(func() {
		_, _ = run("daemon", "stop")
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = daemon.Process.Kill()
			<-exited
		}
	})
	sock := filepath.Join(daemonDir, "mcpdod.sock")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil { // listening: mcpdo uses it
			c.Close()
			break
		}
		select {
		case <-exited:
			return nil, "mcpdo daemon exited: " + daemonOut.String()
		default:
		}
		if time.Now().After(deadline) {
			return nil, "mcpdo daemon: no socket after 30 s: " + daemonOut.String()
		}
	}
	if out, err := run(append([]string{"connect", "--connection", "h", "--connect-timeout", "20000", "--"}, argv...)...); err != nil {
		return nil, "connect: " + err.Error() + ": " + string(out)
	}
	// The connection is held by the daemon started here, not one mcpdo
	// detached.
	if out, err := run("daemon", "status"); err != nil || !bytes.Contains(out, []byte(fmt.Sprintf(`"pid": %d,`, daemon.Process.Pid))) {
		t.Fatalf("mcpdo does not use the daemon started for it (pid %d): %v\n%s", daemon.Process.Pid, err, out)
	}
	out, err := run("--connection", "h", "tools/list")
	if err != nil {
		return nil, "tools/list: " + err.Error() + ": " + string(out)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if i := strings.IndexByte(string(out), '{'); i < 0 || json.Unmarshal(out[i:], &list) != nil {
		return nil, "tools/list: " + string(out)
	}
	for _, tool := range list.Tools {
		tools = append(tools, tool.Name)
	}
	return tools, ""
}

// ts2Holdings is what testdata/npm/tsclient2.mjs (the TypeScript SDK v2
// client) reports it holds.
type ts2Holdings struct {
	ProtocolVersion string                  `json:"protocolVersion"`
	Instructions    *string                 `json:"instructions"`
	Tools           []struct{ Name string } `json:"tools"`
	Error           *string                 `json:"error"`
}

// runTSClient2 runs the TypeScript SDK v2 client on argv, announcing caps,
// and returns the tool names it holds, or what failed.
func runTSClient2(t *testing.T, argv []string, caps string) (tools []string, failure string) {
	t.Helper()
	h := runTSClient2Config(t, map[string]any{"command": argv[0], "args": argv[1:], "capabilities": json.RawMessage(caps), "timeoutMs": 20000})
	if h.Error != nil {
		return nil, *h.Error
	}
	for _, tool := range h.Tools {
		tools = append(tools, tool.Name)
	}
	return tools, ""
}

// runTSClient2Config runs testdata/npm/tsclient2.mjs with the config cfg
// (see there; fixtures.TSClient2Session) and returns what the client holds.
func runTSClient2Config(t *testing.T, cfg any) *ts2Holdings {
	t.Helper()
	out := fixtures.TSClient2Session(t, cfg, 60*time.Second)
	var h ts2Holdings
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("TypeScript SDK v2 client output %q: %v", out, err)
	}
	return &h
}
