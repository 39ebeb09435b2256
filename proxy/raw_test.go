package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
)

// rawPeer speaks newline-delimited JSON-RPC by hand, to see and send exact
// bytes.
type rawPeer struct {
	t     *testing.T
	w     io.Writer
	lines chan []byte
}

func newRawPeer(t *testing.T, r io.Reader, w io.Writer) *rawPeer {
	p := &rawPeer{t: t, w: w, lines: make(chan []byte, 256)}
	go func() {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("sending %s: %v", line, err)
	}
}

// next returns the next line received, or fails the test after a while.
func (p *rawPeer) next() []byte {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the stream ended")
		}
		return line
	case <-time.After(testTimeout):
		p.t.Fatal("no message")
		return nil
	}
}

// quiet asserts that nothing arrives for a moment.
func (p *rawPeer) quiet(d time.Duration) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if ok {
			p.t.Errorf("unexpected message: %s", line)
		}
	case <-time.After(d):
	}
}

// rawMsg is the part of a message the tests look at.
type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, line []byte) rawMsg {
	t.Helper()
	var m rawMsg
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("decoding %s: %v", line, err)
	}
	return m
}

// A script of client lines, legacy generation, written with odd spacing and
// member order on purpose: the server sees them as they are.
var legacyScript = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
	`{"method":"notifications/initialized","jsonrpc":"2.0"}`,
	`{ "jsonrpc" : "2.0" , "id" : "a" , "method" : "tools/list" }`,
	`{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{}}`,
	`{"jsonrpc":"2.0","id":4,"method":"resources/templates/list","params":{}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_note","arguments":{"id":"n1","text":"caf\u00e9 \ud83d\ude00"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"café"}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"notes://n1"}}`,
	`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"summarize_notes"}}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
}

// runScript sends each line of script and collects one answer per request,
// in order (the script waits for each answer before the next request).
func runScript(t *testing.T, p *rawPeer, script []string) [][]byte {
	t.Helper()
	var got [][]byte
	for _, line := range script {
		p.send(line)
		if strings.Contains(line, `"id"`) {
			got = append(got, p.next())
		}
	}
	return got
}

// ownID matches the ids of the proxy's own requests.
var ownID = regexp.MustCompile(`mcpsign-[0-9a-f]{16}-`)

// TestByteIdenticalRelay: every line the client receives through the proxy
// is byte for byte the line it receives from the server directly, and none
// of the proxy's own traffic reaches it.
func TestByteIdenticalRelay(t *testing.T) {
	t.Parallel()
	argv := exampleArgv(t, fixtures.ModeHonest, "--protocol-versions", "2025-11-25")

	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	direct := runScript(t, newRawPeer(t, stdout, stdin), legacyScript)
	stdin.Close()
	cmd.Wait()

	lock := writeTOFULock(t, argv)
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, nil)
	p := newRawPeer(t, s.out, s.in)
	proxied := runScript(t, p, legacyScript)
	p.quiet(200 * time.Millisecond)
	if len(direct) != len(proxied) {
		t.Fatalf("%d answers direct, %d through the proxy", len(direct), len(proxied))
	}
	for i := range direct {
		if !bytes.Equal(direct[i], proxied[i]) {
			t.Errorf("answer %d differs:\ndirect:  %s\nproxied: %s", i, direct[i], proxied[i])
		}
		if ownID.Match(proxied[i]) {
			t.Errorf("answer %d carries the proxy's own ids: %s", i, proxied[i])
		}
	}
	if err := s.wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestModernWithoutDiscover: under 2026-07-28 a client may send its first
// request without server/discover; the proxy holds it, discovers and lists
// itself, and forwards it only when the check passed.
func TestModernWithoutDiscover(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	for _, c := range []struct {
		mode    string
		blocked bool
	}{{fixtures.ModeHonest, false}, {fixtures.ModeRugPull, true}} {
		t.Run(c.mode, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls.log")
			s := startProxy(t, lockPolicy(t, lock, LockOptions{}), exampleArgv(t, c.mode, "--calls-log", calls), nil)
			p := newRawPeer(t, s.out, s.in)
			p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"x"},` + meta + `}}`)
			m := decode(t, p.next())
			if string(m.ID) != "1" {
				t.Fatalf("answer to id %s", m.ID)
			}
			switch {
			case c.blocked && (m.Error == nil || m.Error.Code != BlockedCode):
				t.Errorf("answer %+v, want the block error", m)
			case !c.blocked && m.Error != nil:
				t.Errorf("answer error %+v", m.Error)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`)
			m = decode(t, p.next())
			if c.blocked != (m.Error != nil) {
				t.Errorf("tools/list answer %s", m.Result)
			}
			err := s.wait()
			if b := asBlocked(err); c.blocked != (b != nil && b.Drift()) {
				t.Errorf("Run: %v", err)
			}
			want := 1
			if c.blocked {
				want = 0
			}
			if got := callsLog(t, calls); len(got) != want {
				t.Errorf("calls log %q, want %d call(s)", got, want)
			}
		})
	}
}

// TestDiscoverRepeatedMember: a server/discover answer with a repeated
// instructions member (the last poisoned, which the official clients hold)
// is blocked, never relayed (docs/DISCOVERY.md, "How a hello is read").
func TestDiscoverRepeatedMember(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	s := startProxy(t, lockPolicy(t, lock, LockOptions{TOFU: true}), []string{fixtures.Executable(t, erasserver.Program), "dup-instructions"}, nil)
	p := newRawPeer(t, s.out, s.in)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	m := decode(t, p.next())
	if m.Error == nil || m.Error.Code != BlockedCode || strings.Contains(string(m.Result), erasserver.Poison) {
		t.Fatalf("server/discover answer %+v %s, want the block error", m, m.Result)
	}
	err := s.wait()
	if asBlocked(err) == nil || !errors.Is(err, mcpwire.ErrProtocol) || !strings.Contains(err.Error(), `repeated member "instructions"`) {
		t.Errorf("Run: %v, want a block naming the repeated member", err)
	}
}

// TestUncheckable: a server that does not let itself be listed is blocked,
// not waved through: a listing that never ends (time limit), a message over
// the size cap, invalid definitions.
// Not parallel: the oversized row's example server writes 17 MiB, which
// under -race on a loaded machine came near the 10 s check timeout.
func TestUncheckable(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	cases := []struct {
		name   string
		argv   []string
		drift  bool
		is     error  // the sentinel the block wraps, if there is one
		report string // what the report on stderr names
	}{
		{"hangs-on-list", []string{bad, "--behavior", fixtures.BadHangsOnList}, false, nil, "no complete answer within 1.5s"},
		{"error-on-list", []string{bad, "--behavior", fixtures.BadErrorOnList}, false, nil, "server answered tools/list with error -32603"},
		{"non-string-cursor", []string{bad, "--behavior", fixtures.BadNonStringCursor}, false, mcpwire.ErrProtocol, "nextCursor is not a string"},
		// Refused by the size cap (MaxMessageBytes), well within the
		// check timeout.
		{"oversized", exampleArgv(t, fixtures.ModeOversized), false, mcpwire.ErrMessageTooLarge, "message too large"},
		{"cursor-loop", exampleArgv(t, fixtures.ModeCursorLoop), false, mcpwire.ErrCursorLoop, "cursor loop"},
		{"invalid-definitions", []string{bad, "--behavior", fixtures.BadInvalidDefinitions}, true, nil, "the definitions cannot be pinned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "mcp.lock")
			s := startProxy(t, lockPolicy(t, lock, LockOptions{TOFU: true}), c.argv, func(o *Options) {
				o.CheckTimeout = 10 * time.Second // none is refused for time but hangs-on-list
				switch c.name {
				case "hangs-on-list":
					// It waits for nothing else; long enough for the server's
					// answer to initialize under -race on a loaded machine
					// (300 ms was not, in CI: blocked at initialize instead).
					o.CheckTimeout = 1500 * time.Millisecond
				case "oversized":
					// The refused server is blocked writing the rest of its
					// 17 MiB message, which nobody reads: it ends at the
					// SIGTERM after the grace, not at stdin's close.
					o.ShutdownGrace = 100 * time.Millisecond
				}
			})
			p := newRawPeer(t, s.out, s.in)
			p.send(legacyScript[0])
			m := decode(t, p.next())
			if m.Error == nil || m.Error.Code != BlockedCode {
				t.Fatalf("initialize answer %+v, want the block error", m)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			if m := decode(t, p.next()); m.Error == nil || m.Error.Code != BlockedCode {
				t.Errorf("later answer %+v, want the block error", m)
			}
			err := s.wait()
			b := asBlocked(err)
			if b == nil || b.Drift() != c.drift {
				t.Errorf("Run: %v, want a block (drift %v)", b, c.drift)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("Run: %v, want %v", err, c.is)
			}
			if stderr := s.stderr.String(); !strings.Contains(stderr, "BLOCKED") || !strings.Contains(stderr, c.report) {
				t.Errorf("report on stderr %q, want BLOCKED and %q", stderr, c.report)
			}
		})
	}
}

// TestClientBatchRefused: a JSON-RPC batch is answered by the proxy and
// never reaches the server.
func TestClientBatchRefused(t *testing.T) {
	s, calls := startLocked(t, fixtures.ModeHonest)
	p := newRawPeer(t, s.out, s.in)
	runScript(t, p, legacyScript[:2])
	p.send(`[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"x"}}}]`)
	if m := decode(t, p.next()); m.Error == nil || m.Error.Code != -32600 {
		t.Errorf("batch answer %+v", m)
	}
	if err := s.wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := callsLog(t, calls); len(got) != 0 {
		t.Errorf("calls log %q", got)
	}
}

// TestServerExit: a server that exits on its own ends the session with its
// status.
func TestServerExit(t *testing.T) {
	bad := fixtures.BuildBadServer(t)
	s := startProxy(t, PolicyFunc(func(context.Context, *digest.Snapshot) (*Decision, error) {
		return &Decision{Allow: true}, nil
	}), []string{bad, "--behavior", fixtures.BadExitsAtOnce}, nil)
	select {
	case err := <-s.done:
		s.done <- err
		var se *ServerExitError
		if !errors.As(err, &se) || !strings.Contains(se.Status, "3") {
			t.Errorf("Run: %v, want the server's exit status 3", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the proxy did not end")
	}
}

// TestFirstRequestWithoutHandshake: a first request with neither a
// handshake nor a _meta starts the check once (the proxy discovers with its
// own _meta), then reaches the server, whose answer (the go-sdk serves it:
// the proxy's server/discover opened the session) is relayed, checked.
func TestFirstRequestWithoutHandshake(t *testing.T) {
	lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), exampleArgv(t, fixtures.ModeHonest), nil)
	p := newRawPeer(t, s.out, s.in)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m := decode(t, p.next())
	if string(m.ID) != "1" || (m.Error != nil && m.Error.Code == BlockedCode) {
		t.Errorf("answer to %s: %v, want the server's own answer", m.ID, m.Error)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := decode(t, p.next()); string(m.ID) != "2" {
		t.Errorf("ping answer %+v", m)
	}
	if err := s.wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
}
