package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestServeCommand: 'mcpsign serve' pins on first use (--tofu), serves a
// go-sdk client at /mcp, answers /healthz, /readyz and /metrics, and exits
// 0 once interrupted (drained).
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	s := startServe(t, "--listen", "127.0.0.1:0", "--lock", lock, "--tofu", "--", fixtures.BuildExampleServerNoRace(t))
	base, stderr := s.base, s.stderr
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(cctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.ListTools(cctx, nil)
	if err != nil || len(res.Tools) != len(fixtures.HonestToolNames()) {
		t.Fatalf("tools/list: %v", err)
	}
	cs.Close()
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the first use wrote no lock: %v", err)
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "mcpsign_front_sessions_open"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %q, want 200 with %q", path, resp.StatusCode, body, want)
		}
	}
	if c := s.stop(t); c != 0 {
		t.Errorf("exit %d after the interrupt, want 0:\n%s", c, stderr.String())
	}
}

// TestServeBadStart: what 'mcpsign serve' refuses before it listens: one
// line, exit 2, no file written.
func TestServeBadStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.lock")
	if err := os.WriteFile(bad, []byte("{not a lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(badPolicy, []byte(`{"policyVersion": 1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	server := fixtures.BuildExampleServerNoRace(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no lock", []string{"--lock", filepath.Join(dir, "missing.lock"), "--", server}, "or --tofu"},
		{"bad lock", []string{"--lock", bad, "--", server}, "bad.lock"},
		{"bad policy", []string{"--policy", badPolicy, "--name", "x", "--", server}, "policy"},
		{"oauth", []string{"--lock", bad, "--oauth", "--", "https://example.com/mcp"}, "--oauth"},
		{"half TLS", []string{"--lock", bad, "--tls-cert", "c.pem", "--", server}, "--tls-key"},
		{"plain HTTP off loopback", []string{"--listen", "0.0.0.0:0", "--lock", filepath.Join(dir, "none.lock"), "--tofu", "--", server}, "--allow-plaintext"},
		{"TLS pair missing", []string{"--tls-cert", filepath.Join(dir, "c.pem"), "--tls-key", filepath.Join(dir, "k.pem"), "--lock", filepath.Join(dir, "none.lock"), "--tofu", "--", server}, "--tls-cert"},
		{"bad origin", []string{"--allow-origin", "https://app.example.com/path", "--lock", bad, "--", server}, "more than scheme, host and port"},
		{"tokens file missing", []string{"--tokens-file", filepath.Join(dir, "tokens"), "--lock", bad, "--", server}, "no such file"},
		{"two token sources", []string{"--tokens-file", "t", "--tokens-env", "T", "--lock", bad, "--", server}, "one source"},
		{"tokens and pass-authorization", []string{"--tokens-env", "T", "--pass-authorization", "--lock", bad, "--", server}, "both use the client's Authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := &fixtures.SyncBuffer{}
			a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
			code := run(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), a)
			out := stderr.String()
			if code != 2 || !strings.Contains(out, tc.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 || strings.Contains(out, "listening") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, out, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files were written: %v", entries)
	}
}

// TestServiceFlagsShared: serve and registry serve take the listener and
// drain flags from one group (options.ServiceOptions): the same names,
// meaning and help.
func TestServiceFlagsShared(t *testing.T) {
	root := newRootCmd(newApp())
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := root.Find([]string{"registry", "serve"})
	if err != nil || reg == serve {
		t.Fatal("no registry serve")
	}
	for _, name := range []string{"listen", "tls-cert", "tls-key", "allow-plaintext", "drain-timeout"} {
		s, r := serve.Flags().Lookup(name), reg.Flags().Lookup(name)
		if s == nil || r == nil {
			t.Errorf("--%s: serve has it %v, registry serve %v", name, s != nil, r != nil)
			continue
		}
		if s.Usage != r.Usage || s.Value.Type() != r.Value.Type() {
			t.Errorf("--%s differs: %q (%s) and %q (%s)", name, s.Usage, s.Value.Type(), r.Usage, r.Value.Type())
		}
	}
	for _, name := range []string{"allow-origin", "tokens-file", "tokens-env"} {
		if serve.Flags().Lookup(name) == nil {
			t.Errorf("serve has no --%s", name)
		}
	}
}

// TestServeTokensEnvNotInherited: the clients' tokens of --tokens-env are
// taken out of the environment before any upstream starts (a stdio server
// inherits it).
func TestServeTokensEnvNotInherited(t *testing.T) {
	const name = "MCPSIGN_TEST_SERVE_TOKENS"
	t.Setenv(name, "0123456789abcdef0123456789abcdef")
	s := startServe(t, "--listen", "127.0.0.1:0", "--tokens-env", name, "--lock", filepath.Join(t.TempDir(), "mcp.lock"), "--tofu", "--", fixtures.BuildExampleServerNoRace(t))
	if v, ok := os.LookupEnv(name); ok {
		t.Errorf("$%s is still in the environment every stdio upstream inherits (%d bytes)", name, len(v))
	}
	s.stop(t)
}

// servedCLI is 'mcpsign serve' run in process by a test (startServe).
type servedCLI struct {
	base   string // the front's http://host:port
	stderr *fixtures.SyncBuffer
	code   chan int
	cancel context.CancelFunc
}

// startServe runs 'mcpsign serve' with args (after "serve") until stop or
// the test's end, and waits until it says where it listens.
func startServe(t *testing.T, args ...string) *servedCLI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &servedCLI{stderr: &fixtures.SyncBuffer{}, code: make(chan int, 1), cancel: cancel}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: s.stderr, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
	go func() { s.code <- run(ctx, append([]string{"serve"}, args...), a) }()
	s.base = s.waitFor(t, regexp.MustCompile(`listening on (http://[^ ]+)/mcp`))[1]
	return s
}

// waitFor waits up to 20 s for re in serve's stderr and returns its match.
func (s *servedCLI) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in serve's stderr:\n%s", re, s.stderr.String())
		}
	}
}

// stop interrupts serve, as SIGINT does, and returns its exit code.
func (s *servedCLI) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case c := <-s.code:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not end after the interrupt")
		return -1
	}
}
