package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/source"
)

// The e2e tests run the official MCP servers pinned in testdata/npm
// (install with `npm ci` there). They skip when node or the servers are
// missing, unless MCPSIGN_REQUIRE_E2E=1 (CI), which makes that a failure.

// npmServer returns the argv of an installed official server.
func npmServer(t *testing.T, pkg string) []string {
	t.Helper()
	node, entry := fixtures.NPMServer(t, pkg)
	return []string{node, entry}
}

// everythingGrace is how long server-everything is given to exit after its
// stdin closes, directly, through the proxy (Options.ShutdownGrace) and when
// listed (source.Options.ShutdownGrace): it does not exit then, but at the
// SIGTERM (or kill) that follows, which the tests need not wait seconds for.
const everythingGrace = 200 * time.Millisecond

// shortGrace sets the proxy's ShutdownGrace to everythingGrace.
func shortGrace(o *Options) { o.ShutdownGrace = everythingGrace }

// everythingListing is server-everything's listing under the default
// client capabilities, taken once per test process for the tests that read
// the same listing (each pins it to its own lock).
var everythingListing struct {
	sync.Mutex
	data []byte
}

// writeEverythingLock pins server-everything's listing (trusted on first
// use) to a lock file in a temporary directory and returns its path.
func writeEverythingLock(t *testing.T, argv []string) string {
	t.Helper()
	everythingListing.Lock()
	defer everythingListing.Unlock()
	if everythingListing.data == nil {
		data, err := snapshotWith(t, argv, source.Options{ShutdownGrace: everythingGrace}).MarshalFile()
		if err != nil {
			t.Fatal(err)
		}
		everythingListing.data = data
	}
	snap, err := digest.ParseSnapshot(everythingListing.data)
	if err != nil {
		t.Fatal(err)
	}
	return writeTOFULockOf(t, snap)
}

// recorder keeps the responses a client receives, by id, as raw lines.
type recorder struct {
	mu        sync.Mutex
	responses map[string][]byte
	pr        *io.PipeReader
}

// record tees r: the client reads through the returned reader.
func record(r io.Reader) (*recorder, io.ReadCloser) {
	rec := &recorder{responses: map[string][]byte{}}
	pr, pw := io.Pipe()
	rec.pr = pr
	go func() {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(line, &m) == nil && m.ID != nil && m.Method == "" {
					rec.mu.Lock()
					rec.responses[string(m.ID)] = bytes.Clone(line)
					rec.mu.Unlock()
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return rec, pr
}

// everythingScript is the scripted client session: every listing, and the
// calls whose answers do not depend on time or randomness (the dynamic
// resources carry the time they were made).
func everythingScript(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools: %v", err)
		}
	}
	for _, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts: %v", err)
		}
	}
	for _, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("resource templates: %v", err)
		}
	}
	calls := []mcp.CallToolParams{
		{Name: "echo", Arguments: map[string]any{"message": "hello \u00e9\u200b through mcpsign"}},
		{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 40}},
		{Name: "get-tiny-image", Arguments: map[string]any{}},
		{Name: "get-annotated-message", Arguments: map[string]any{"messageType": "error", "includeImage": true}},
		{Name: "get-structured-content", Arguments: map[string]any{"location": "New York"}},
	}
	for _, c := range calls {
		if _, err := cs.CallTool(ctx, &c); err != nil {
			t.Fatalf("tools/call %s: %v", c.Name, err)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Paris"}}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	for _, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources: %v", err)
		}
	}
}

// TestEverythingByteIdentical: a scripted go-sdk client session through the
// proxy to the official server-everything receives byte for byte the
// answers a direct session receives.
func TestEverythingByteIdentical(t *testing.T) {
	t.Parallel() // each its own server, proxy and lock
	argv := npmServer(t, "server-everything")
	ctx := e2eContext(t)

	direct := func() map[string][]byte {
		cmd := exec.Command(argv[0], argv[1:]...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rec, r := record(stdout)
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
		cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: stdin}, nil)
		if err != nil {
			t.Fatalf("direct connect: %v", err)
		}
		everythingScript(ctx, t, cs)
		cs.Close()
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(everythingGrace): // it does not exit when its stdin closes
			cmd.Process.Kill()
			<-done
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.responses
	}()

	lock := filepath.Join(t.TempDir(), "mcp.lock")
	s := startProxy(t, lockPolicy(t, lock, LockOptions{TOFU: true}), argv, shortGrace)
	rec, r := record(s.out)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: s.in}, nil)
	if err != nil {
		t.Fatalf("proxied connect: %v", err)
	}
	everythingScript(ctx, t, cs)
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rec.mu.Lock()
	proxied := rec.responses
	rec.mu.Unlock()

	if len(direct) < 10 || len(direct) != len(proxied) {
		t.Fatalf("%d answers direct, %d through the proxy", len(direct), len(proxied))
	}
	for id, want := range direct {
		got, ok := proxied[id]
		switch {
		case !ok:
			t.Errorf("no answer to id %s through the proxy", id)
		case !bytes.Equal(got, want):
			t.Errorf("answer to id %s differs:\ndirect:  %.300s\nproxied: %.300s", id, want, got)
		}
	}
	for id := range proxied {
		if strings.Contains(id, "mcpsign-") {
			t.Errorf("the client received an answer to the proxy's own request %s", id)
		}
	}
	t.Logf("%d answers compared byte for byte", len(direct))
}

// TestEverythingLockFromSnapshot: a lock made from what 'mcpsign snapshot'
// lists (after notifications/initialized, when server-everything registers
// the tools that depend on the client's capabilities) is what the proxy
// sees too: the session is not blocked.
func TestEverythingLockFromSnapshot(t *testing.T) {
	t.Parallel() // each its own server, proxy and lock
	argv := npmServer(t, "server-everything")
	ctx := e2eContext(t)
	lock := writeEverythingLock(t, argv)
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, shortGrace)
	cs, err := s.connect(ctx, "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools: %v", err)
		}
		n++
	}
	if n < 14 {
		t.Errorf("%d tools", n)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestEverythingClientWithoutRoots: a lock written under
// mcpsign's default capabilities (roots) holds get-roots-list, which
// server-everything offers only to clients that announce roots. A go-sdk
// client that announces no roots is not blocked: the proxy reports the
// capability difference first, then the tool absent for this client, and
// the client never sees get-roots-list.
func TestEverythingClientWithoutRoots(t *testing.T) {
	t.Parallel() // each its own server, proxy and lock
	argv := npmServer(t, "server-everything")
	ctx := e2eContext(t)
	lock := writeEverythingLock(t, argv)
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Lookup(digest.KindTool, "get-roots-list"); !ok || string(l.ClientCapabilities) != source.DefaultClientCapabilities {
		t.Fatalf("the lock has get-roots-list %v under %s", ok, l.ClientCapabilities)
	}
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, shortGrace)
	cs, err := s.connect(ctx, "", &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{}, // no roots
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools: %v", err)
		}
		if tool.Name == "get-roots-list" {
			t.Error("the client without roots was offered get-roots-list")
		}
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var report string
	for len(s.events) > 0 {
		if e := <-s.events; e.Decision != nil {
			report += e.Decision.ReportText()
		}
	}
	checkOrder(t, report, []string{pin.RuleClientCapabilitiesDiffer, pin.RuleToolAbsentForClient + "  tool \"get-roots-list\""})
}
