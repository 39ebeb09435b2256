package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
)

// TestProxyRemote runs 'mcpsign proxy -- URL' as a host does (handing over
// to mcpsign-proxy) in front of the example server served over Streamable
// HTTP by go-sdk, with a go-sdk client on its stdio: signed first use, a
// rug pull blocked before any call reaches the server, a signed update
// rolled forward, verify-pin agreeing, and credentials from --header with
// ${VAR}.
func TestProxyRemote(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	dir := t.TempDir()
	env := keysEnv()
	publisher, _ := sharedKeys(t)
	// The policy below names the key beside it.
	vtWriteBytes(t, filepath.Join(dir, "publisher.pub"), mustRead(t, publisher.pub))
	calls := filepath.Join(dir, "calls.log")
	honest := fixtures.StartExampleHTTP(t, fixtures.ModeHonest)
	rugpull := fixtures.StartExampleHTTP(t, fixtures.ModeRugPull, "--calls-log", calls)
	bundle := filepath.Join(dir, "server.sigstore.json")
	sign := func(url string) {
		t.Helper()
		if code, _, stderr := runSetup(t, env, "sign", "key", "--key", publisher.key, "--password-env", "PW", "-o", bundle, "--force", url); code != 0 {
			t.Fatalf("sign %s: %s", url, stderr)
		}
	}
	lock := filepath.Join(dir, "mcp.lock")
	argv := func(url string, extra ...string) []string {
		return append(append([]string{mcpsign, "proxy", "--lock", lock, "--bundle", bundle, "--key", publisher.pub}, extra...), "--", url)
	}

	t.Run("signed first use", func(t *testing.T) {
		sign(honest)
		p, err := startProxyProcess(t, argv(honest)...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if name := executableName(p.cmd.Process.Pid); name != "" && name != proxycmd.ExecutableName {
			t.Errorf("the proxy runs as %q, want %q", name, proxycmd.ExecutableName)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.HonestToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		l, err := pin.Read(lock)
		if err != nil || l.Approval.Method != evidence.MethodKey {
			t.Fatalf("lock: %v %+v", err, l)
		}
		if code, _, stderr := runCLI(t, "verify-pin", "--lock", lock, honest); code != 0 {
			t.Errorf("verify-pin of the honest server: exit %d\n%s", code, stderr)
		}
	})

	t.Run("rug pull", func(t *testing.T) {
		before, _ := os.ReadFile(lock)
		auditLog := filepath.Join(dir, "audit.jsonl")
		p, err := startProxyProcess(t, argv(rugpull, "--audit-log", auditLog)...)
		if err == nil {
			_, err = p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
		}
		if err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
			t.Fatalf("not blocked: %v", err)
		}
		if code := p.end(t); code != proxycmd.ExitBlocked {
			t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
		}
		if data, _ := os.ReadFile(calls); len(bytes.TrimSpace(data)) > 0 {
			t.Errorf("a call reached the server:\n%s", data)
		}
		if after, _ := os.ReadFile(lock); !bytes.Equal(before, after) {
			t.Error("the lock changed")
		}
		if data, _ := os.ReadFile(auditLog); !strings.Contains(string(data), `"event":"blocked"`) {
			t.Errorf("the audit log does not record the block:\n%s", data)
		}
		if code, _, _ := runCLI(t, "verify-pin", "--lock", lock, rugpull); code != 1 {
			t.Errorf("verify-pin of the rug pull: exit %d, want 1", code)
		}
	})

	t.Run("signed update", func(t *testing.T) {
		sign(rugpull)
		p, err := startProxyProcess(t, argv(rugpull)...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d\n%s", code, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String(), "rolled forward") {
			t.Errorf("no roll-forward:\n%s", p.stderr.String())
		}
	})

	t.Run("policy, and the bundle the server advertises", func(t *testing.T) {
		// The rug-pull server now advertises its signed bundle in its
		// hello; the policy names the key and a lock of its own.
		advertising := fixtures.StartExampleHTTP(t, fixtures.ModeRugPull, "--bundle", bundle)
		pol := filepath.Join(dir, "policy.json")
		policyLock := filepath.Join(dir, "policy.lock")
		if err := os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"notes":{"identities":[{"method":"key","key":"publisher.pub"}],"bundle":"server","lock":"policy.lock"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := startProxyProcess(t, mcpsign, "proxy", "--policy", pol, "--name", "notes", "--", advertising)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if l, err := pin.Read(policyLock); err != nil || l.Approval.Method != evidence.MethodKey {
			t.Fatalf("policy lock: %v", err)
		}
	})

	t.Run("credentials from --header", func(t *testing.T) {
		target, _ := url.Parse(strings.TrimSuffix(rugpull, "/mcp"))
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.FlushInterval = -1
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		guarded := srv.URL + "/mcp"
		p, err := startProxyProcessEnv(t, []string{"REMOTE_TEST_TOKEN=s3cret-token"}, argv(guarded, "--header", "Authorization: Bearer ${REMOTE_TEST_TOKEN}")...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if strings.Contains(p.stderr.String(), "s3cret") {
			t.Error("the token was printed")
		}
		// Without it: one line that says what failed and what to do.
		p, _ = startProxyProcess(t, argv(guarded)...)
		if code := p.end(t); code != proxycmd.ExitError {
			t.Errorf("exit %d, want 2", code)
		}
		lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
		t.Logf("without credentials: %s", lines[len(lines)-1])
		if last := lines[len(lines)-1]; !strings.Contains(last, "401 Unauthorized") || !strings.Contains(last, "--header") {
			t.Errorf("stderr:\n%s", p.stderr.String())
		}
	})
}

func TestProxyRemoteUsage(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tofu", "--", "http://example.com/mcp"}, "loopback"},
		{[]string{"--tofu", "--header", "X-A: 1", "--", "server"}, "--header is for a remote server"},
		{[]string{"--tofu", "--header", "X-A: ${REMOTE_TEST_UNSET_VAR}", "--", "http://127.0.0.1:1/mcp"}, "REMOTE_TEST_UNSET_VAR"},
		{[]string{"--tofu", "--header", "Mcp-Session-Id: x", "--", "http://127.0.0.1:1/mcp"}, "Mcp-Session-Id"},
	} {
		code, _, stderr := runCLI(t, append([]string{"proxy", "--lock", lock}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q: want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// tsHoldings is what testdata/npm/tsclient.mjs (the official TypeScript
// SDK as a host's stdio client) reports it holds.
type tsHoldings struct {
	Instructions *string           `json:"instructions"`
	Tools        []json.RawMessage `json:"tools"`
	Calls        []struct {
		Name      string `json:"name"`
		OK        bool   `json:"ok"`
		ErrorCode *int   `json:"errorCode"`
	} `json:"calls"`
	Hung     []string `json:"hung"`
	ExitCode *int     `json:"exitCode"`
	Stderr   string   `json:"stderr"`
}

// runTSClient runs the TypeScript client on the stdio of argv.
func runTSClient(t *testing.T, argv []string, call map[string]any) *tsHoldings {
	t.Helper()
	node := fixtures.Node(t)
	dir := fixtures.NPMDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		fixtures.MissingE2E(t, "@modelcontextprotocol/sdk is not installed (%v)", err)
	}
	cfg, _ := json.Marshal(map[string]any{"command": argv[0], "args": argv[1:], "call": call, "timeoutMs": 5000, "settleMs": 300})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "tsclient.mjs"), string(cfg))
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v", err)
	}
	var h tsHoldings
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("TypeScript client output %q: %v", out, err)
	}
	return &h
}

// TestProxyRemoteTypeScript: the official TypeScript SDK as the host's
// stdio client of the bridge, in front of go-sdk's Streamable HTTP handler:
// it holds exactly the lock, or the session is blocked before the rug pull
// reaches it.
func TestProxyRemoteTypeScript(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	honest := fixtures.StartExampleHTTP(t, fixtures.ModeHonest)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, honest); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	call := map[string]any{"name": "search_notes", "arguments": map[string]any{"query": "x"}}
	for _, tc := range []struct {
		name    string
		mode    string
		blocked bool
	}{
		{"honest", fixtures.ModeHonest, false},
		{"rug pull", fixtures.ModeRugPull, true},
		{"drift announced on the GET stream", "list-changed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := filepath.Join(t.TempDir(), "calls.log")
			url := fixtures.StartExampleHTTP(t, tc.mode, "--calls-log", calls)
			before, _ := os.ReadFile(lock)
			h := runTSClient(t, []string{mcpsign, "proxy", "--lock", lock, "--", url}, call)
			if after, _ := os.ReadFile(lock); !bytes.Equal(before, after) {
				t.Error("the lock changed")
			}
			if len(h.Hung) > 0 {
				t.Errorf("unanswered: %q", h.Hung)
			}
			// Whatever the client holds is the lock's.
			var held []string
			for _, raw := range h.Tools {
				var tool struct {
					Name string `json:"name"`
				}
				json.Unmarshal(raw, &tool)
				held = append(held, tool.Name)
				var d *pin.Definition
				for i := range l.Definitions {
					if l.Definitions[i].Kind == "tool" && l.Definitions[i].Key == tool.Name {
						d = &l.Definitions[i]
					}
				}
				if d == nil || !jsonEqual(d.Definition, raw) {
					t.Errorf("the client holds tool %s, not the lock's", tool.Name)
				}
			}
			if !tc.blocked {
				slices.Sort(held)
				if !slices.Equal(held, fixtures.HonestToolNames()) || len(h.Calls) != 1 || !h.Calls[0].OK {
					t.Errorf("tools %q, calls %+v\n%s", held, h.Calls, h.Stderr)
				}
				return
			}
			if h.ExitCode == nil || *h.ExitCode != proxycmd.ExitBlocked {
				t.Errorf("exit %v, want %d\n%s", h.ExitCode, proxycmd.ExitBlocked, h.Stderr)
			}
			if tc.mode == fixtures.ModeRugPull {
				if data, _ := os.ReadFile(calls); len(bytes.TrimSpace(data)) > 0 {
					t.Errorf("a call reached the server:\n%s", data)
				}
			}
		})
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestProxyRemoteProtocolViolation: a server whose answer two clients
// would read differently (a lone CR in its event stream) blocks the
// session: -32001 to the client, the reason on stderr, exit 42, no file
// written.
func TestProxyRemoteProtocolViolation(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\rdata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"x\",\"version\":\"1\"}}}\n\n", m.ID)
	}))
	t.Cleanup(srv.Close)
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	p, err := startProxyProcess(t, mcpsign, "proxy", "--lock", lock, "--tofu", "--", srv.URL+"/mcp")
	if err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
		t.Errorf("initialize: %v, want the block", err)
	}
	if code := p.end(t); code != proxycmd.ExitBlocked {
		t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
	}
	if !strings.Contains(p.stderr.String(), "CR") {
		t.Errorf("stderr does not say why:\n%s", p.stderr.String())
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("a lock was written")
	}
}
