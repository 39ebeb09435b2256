package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
)

// cliSession runs one mcpsign command in-process with its stdio on pipes.
type cliSession struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	stderr *fixtures.SyncBuffer
	code   chan int
}

func startCLI(t *testing.T, env map[string]string, args ...string) *cliSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &cliSession{in: inW, out: outR, stderr: &fixtures.SyncBuffer{}, code: make(chan int, 1)}
	a := &app{
		stdin:      inR,
		stdout:     outW,
		stderr:     s.stderr,
		getenv:     func(k string) string { return env[k] },
		isTerminal: func() bool { return false },
	}
	go func() {
		code := run(context.Background(), args, a)
		outW.Close()
		s.code <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		if t.Failed() {
			t.Logf("stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// exit closes the client's side and returns the exit code.
func (s *cliSession) exit(t *testing.T) int {
	t.Helper()
	s.in.Close()
	select {
	case c := <-s.code:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not end")
		return -1
	}
}

// client connects a go-sdk client to the command's stdio; every line the
// client reads is recorded.
func (s *cliSession) client(t *testing.T) (*mcp.ClientSession, *bytes.Buffer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := &bytes.Buffer{}
	r := io.NopCloser(io.TeeReader(s.out, seen))
	c := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: s.in}, nil)
	return cs, seen, err
}

func TestProxyCommand(t *testing.T) {
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	calls := filepath.Join(dir, "calls.log")

	// No lock and neither --tofu nor --bundle: refused before the server starts.
	if code, _, stderr := runCLI(t, "proxy", "--lock", lock, "--", server); code != 2 || !strings.Contains(stderr, lock) || !strings.Contains(stderr, "--tofu") {
		t.Fatalf("missing lock: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "proxy", "--lock", lock, "--tofu", server); code != 2 || !strings.Contains(stderr, "after --") {
		t.Fatalf("no --: exit %d, stderr %q", code, stderr)
	}

	// First use, trusted: the session goes on and the lock is written.
	s := startCLI(t, nil, "proxy", "--lock", lock, "--tofu", "--", server, "--calls-log", calls)
	cs, seen, err := s.client(t)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil {
		t.Fatalf("call: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Fatalf("honest session: exit %d", code)
	}
	if _, err := pin.Read(lock); err != nil {
		t.Fatalf("lock: %v", err)
	}
	// Nothing but JSON-RPC on stdout.
	sc := bufio.NewScanner(seen)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("stdout holds a line that is not JSON: %q", sc.Text())
		}
	}
	if !strings.Contains(s.stderr.String(), "wrote the lock") {
		t.Errorf("no notice of the first use on stderr: %s", s.stderr.String())
	}

	// The rug pull: blocked, exit 42, the diff escaped on stderr.
	os.Remove(calls)
	s = startCLI(t, nil, "proxy", "--lock", lock, "--", server, "--mode", "rugpull", "--calls-log", calls)
	if _, _, err := s.client(t); err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
		t.Fatalf("rug pull: connect %v, want the block error", err)
	}
	if code := s.exit(t); code != proxycmd.ExitBlocked {
		t.Fatalf("rug pull: exit %d, want %d", code, proxycmd.ExitBlocked)
	}
	stderr := s.stderr.String()
	if !strings.Contains(stderr, "pin-tool-added") || !strings.Contains(stderr, `\u{202E}`) || strings.ContainsAny(stderr, "\u200b\u202e\u202c") {
		t.Errorf("the report is incomplete or holds hidden characters:\n%s", stderr)
	}
	if data, _ := os.ReadFile(calls); len(data) != 0 {
		t.Errorf("calls reached the server: %s", data)
	}

	// A hand-edited lock: exit 2 naming the file, the file untouched.
	data, _ := os.ReadFile(lock)
	edited := bytes.Replace(data, []byte("Search the notes"), []byte("Search all notes"), 1)
	if err := os.WriteFile(lock, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "proxy", "--lock", lock, "--", server, "--calls-log", calls)
	if code != 2 || !strings.Contains(stderr, lock) || !strings.Contains(stderr, "modified") || stdout != "" {
		t.Errorf("modified lock: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(lock); !bytes.Equal(after, edited) {
		t.Errorf("the modified lock was changed")
	}
}

// TestProxyCommandSignedFirstUse: --bundle with --key verifies and writes
// the lock; the wrong key refuses.
func TestProxyCommandSignedFirstUse(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "demo")
	// The demo's files: a key pair and a bundle over the honest server.
	if code, stdout, stderr := runWith(t, map[string]string{envDemoServer: server}, "demo", "--keep", out); code != 0 {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr) // the demo reports its steps on stdout
	}
	bundle, pub := filepath.Join(out, "server.sigstore.json"), filepath.Join(out, "publisher.pub")
	lock := filepath.Join(dir, "mcp.lock")
	s := startCLI(t, nil, "proxy", "--lock", lock, "--bundle", bundle, "--key", pub, "--", server)
	cs, _, err := s.client(t)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	l, err := pin.Read(lock)
	if err != nil || l.Approval.Method != evidence.MethodKey {
		t.Fatalf("lock %v %+v", err, l)
	}

	// Another key: the first use does not verify, the session is blocked.
	other := filepath.Join(dir, "other")
	if code, stdout, stderr := runWith(t, map[string]string{envDemoServer: server}, "demo", "--keep", other); code != 0 {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lock2 := filepath.Join(dir, "mcp2.lock")
	s = startCLI(t, nil, "proxy", "--lock", lock2, "--bundle", bundle, "--key", filepath.Join(other, "publisher.pub"), "--", server)
	if _, _, err := s.client(t); err == nil {
		t.Fatal("a bundle by another key was accepted")
	}
	if code := s.exit(t); code != proxycmd.ExitBlocked {
		t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
	}
	if _, err := os.Stat(lock2); err == nil {
		t.Errorf("a lock was written")
	}
}

// TestDemo runs 'mcpsign demo' against the example server binary.
func TestDemo(t *testing.T) {
	server := fixtures.BuildExampleServerNoRace(t)
	start := time.Now()
	code, stdout, stderr := runWith(t, map[string]string{envDemoServer: server}, "demo")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"1. The server", "✓ verified", "✓ allowed", "blocked by mcpsign", `\u{200B}`, "✓ blocked before any call", "list_changed", "Everything behaved as expected"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the narration lacks %q", want)
		}
	}
	if strings.ContainsAny(stdout, "\u200b\u202e") {
		t.Errorf("the narration holds unescaped hidden characters")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the demo took %v", d)
	}
}

// TestDemoKeepTwice: a second 'demo --keep DIR' refuses to replace the
// first one's files, unless --force, which leaves other files alone.
func TestDemoKeepTwice(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	env := map[string]string{envDemoServer: fixtures.BuildExampleServerNoRace(t)}
	dir := filepath.Join(t.TempDir(), "demo")
	if code, stdout, stderr := runWith(t, env, "demo", "--keep", dir); code != 0 {
		t.Fatalf("first: exit %d\n%s%s", code, stdout, stderr)
	}
	mine := filepath.Join(dir, "mine.txt")
	os.WriteFile(mine, []byte("mine"), 0o644)
	if code, _, stderr := runWith(t, env, "demo", "--keep", dir); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second without --force: exit %d %s", code, stderr)
	}
	if code, stdout, stderr := runWith(t, env, "demo", "--keep", dir, "--force"); code != 0 || !strings.Contains(stdout, "Everything behaved as expected") {
		t.Errorf("second with --force: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Error("--force touched a file that is not the demo's")
	}
}

// TestExampleServerCommand: the hidden command serves the example server
// over the command's stdio.
func TestExampleServerCommand(t *testing.T) {
	s := startCLI(t, nil, "example-server", "--mode", "rugpull")
	cs, _, err := s.client(t)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != len(fixtures.RugPullToolNames()) {
		t.Fatalf("tools/list: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	if code, _, stderr := runCLI(t, "example-server", "--mode", "nonsense"); code != 2 || !strings.Contains(stderr, "unknown mode") {
		t.Errorf("bad mode: exit %d, %q", code, stderr)
	}
}

// TestProxySilentServer: a server that never answers initialize is not
// waited for silently: after --check-timeout the client gets error -32001,
// stderr says what was awaited, and the proxy exits 2 once the client
// leaves.
func TestProxySilentServer(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	s := startCLI(t, nil, "proxy", "--lock", lock, "--tofu", "--check-timeout", "300ms", "--", sh, "-c", "cat >/dev/null")
	go io.WriteString(s.in, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(s.out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(io.Discard, s.out)
	}()
	var answer struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &answer); err != nil || answer.ID != 7 || answer.Error.Code != -32001 {
			t.Errorf("answer to initialize: %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to initialize")
	}
	if code := s.exit(t); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if stderr := s.stderr.String(); !strings.Contains(stderr, "the server's answer to initialize") || !strings.Contains(stderr, "no answer within 300ms") {
		t.Errorf("stderr does not say what was awaited: %s", stderr)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("a lock was written")
	}
}
