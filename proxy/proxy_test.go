package proxy

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// generations are the two protocol generations a go-sdk client speaks to
// the example server over stdio.
var generations = []struct {
	name       string
	serverArgs []string // extra example server args
	want       string   // negotiated version
}{
	{name: "2026-07-28", want: "2026-07-28"},
	{name: "initialize", serverArgs: []string{"--protocol-versions", "2025-11-25"}, want: "2025-11-25"},
}

// startLocked runs the example server in mode (with extra args) behind a
// proxy enforcing a tofu lock of its honest definitions, and returns the
// session and the server's calls log.
func startLocked(t *testing.T, mode string, args ...string) (s *session, calls string) {
	t.Helper()
	return startLockedWith(t, mode, nil, args...)
}

// startLockedWith is startLocked with the proxy's options changed by mod.
func startLockedWith(t *testing.T, mode string, mod func(*Options), args ...string) (s *session, calls string) {
	t.Helper()
	lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	calls = filepath.Join(t.TempDir(), "calls.log")
	s = startProxy(t, lockPolicy(t, lock, LockOptions{}), exampleArgv(t, mode, append([]string{"--calls-log", calls}, args...)...), mod)
	return s, calls
}

func TestHonestSession(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			s, calls := startLocked(t, fixtures.ModeHonest, g.serverArgs...)
			cs, err := s.connect(ctx, "", nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != g.want {
				t.Errorf("negotiated %q, want %q", got, g.want)
			}
			if got := cs.InitializeResult().Instructions; got != fixtures.ExampleInstructions {
				t.Errorf("instructions %q", got)
			}
			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("listing tools: %v", err)
				}
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, fixtures.HonestToolNames()) {
				t.Errorf("tools %v, want %v", names, fixtures.HonestToolNames())
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
			if err != nil {
				t.Fatalf("calling search_notes: %v", err)
			}
			if res.IsError {
				t.Errorf("search_notes failed: %+v", res.Content)
			}
			if _, err := cs.ListPrompts(ctx, nil); err != nil {
				t.Errorf("listing prompts: %v", err)
			}
			if _, err := cs.ListResourceTemplates(ctx, nil); err != nil {
				t.Errorf("listing resource templates: %v", err)
			}
			cs.Close()
			if err := s.wait(); err != nil {
				t.Errorf("Run: %v", err)
			}
			if got := callsLog(t, calls); len(got) != 1 || !strings.Contains(got[0], "search_notes") {
				t.Errorf("calls log %q, want one search_notes call", got)
			}
		})
	}
}

func TestRugPullBlockedBeforeAnyCall(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			s, calls := startLocked(t, fixtures.ModeRugPull, g.serverArgs...)
			_, err := s.connect(ctx, "", nil)
			if !isBlocked(err) {
				t.Fatalf("connect: %v, want the block error", err)
			}
			err = s.wait()
			b := asBlocked(err)
			if b == nil || !b.Drift() {
				t.Fatalf("Run: %v, want a drift block", err)
			}
			if got := callsLog(t, calls); len(got) != 0 {
				t.Errorf("calls reached the server: %q", got)
			}
			stderr := s.stderr.String()
			for _, want := range []string{"BLOCKED", "pin-tool-added", "run_command", "pin-tool-changed", "search_notes", `\u{200B}`, `\u{202E}`} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.ContainsAny(stderr, "\u200b\u202e\u202c") {
				t.Errorf("stderr holds unescaped invisible or bidi characters")
			}
		})
	}
}

// TestHonestProbeBlocked: the server answers the proxy's own listing
// honestly and the client's differently; the client's list result is
// checked and refused.
func TestHonestProbeBlocked(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			s, calls := startLocked(t, fixtures.ModeHonestProbe, g.serverArgs...)
			cs, err := s.connect(ctx, "", nil)
			if err != nil {
				t.Fatalf("connect: %v (the start-up listing is honest)", err)
			}
			if _, err := cs.ListTools(ctx, nil); !isBlocked(err) {
				t.Fatalf("tools/list: %v, want the block error", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "id"}}); !isBlocked(err) {
				t.Errorf("tools/call after the block: %v, want the block error", err)
			}
			cs.Close()
			if b := asBlocked(s.wait()); b == nil || !b.Drift() || !strings.Contains(b.What, "tools/list") {
				t.Errorf("Run: %v, want a drift block of the tools/list result", b)
			}
			if got := callsLog(t, calls); len(got) != 0 {
				t.Errorf("calls reached the server: %q", got)
			}
		})
	}
}

// TestListChangedMidSession: the server changes after the first call and
// announces it; the proxy lists again and blocks before any later call.
func TestListChangedMidSession(t *testing.T) {
	t.Parallel()
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			s, calls := startLocked(t, fixtures.ModeListChanged, g.serverArgs...)
			changed := make(chan struct{}, 1)
			cs, err := s.connect(ctx, "", &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					changed <- struct{}{}
				},
			})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			// The server changes while it answers the first call and
			// announces the change 10 ms later. On a loaded machine the
			// announcement can overtake the answer: the proxy then blocks
			// with the call in flight, and answers it with the block error.
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil && !isBlocked(err) {
				t.Fatalf("first call: %v", err)
			}
			// Whichever the proxy sees first (the announcement, or the
			// changed list), the session is blocked.
			select {
			case ev := <-waitEvent(s, EventBlocked):
				if !strings.Contains(ev.What, "list_changed") {
					t.Logf("blocked by %s", ev.What)
				}
			case <-ctx.Done():
				t.Fatal("no block after the change")
			}
			if _, err := cs.ListTools(ctx, nil); !isBlocked(err) {
				t.Errorf("tools/list after the change: %v, want the block error", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "y"}}); !isBlocked(err) {
				t.Errorf("second call: %v, want the block error", err)
			}
			select {
			case <-changed:
				t.Errorf("the client received the list_changed notification of a blocked change")
			default:
			}
			cs.Close()
			if b := asBlocked(s.wait()); b == nil || !b.Drift() {
				t.Errorf("Run: %v, want a drift block", b)
			}
			if got := callsLog(t, calls); len(got) != 1 {
				t.Errorf("calls log %q, want exactly the first call", got)
			}
		})
	}
}

// waitEvent returns a channel that receives the first event of kind.
func waitEvent(s *session, kind EventKind) <-chan Event {
	ch := make(chan Event, 1)
	go func() {
		for ev := range s.events {
			if ev.Kind == kind {
				ch <- ev
				return
			}
		}
	}()
	return ch
}

// TestPaginated: every listing, the proxy's and the client's, comes one
// definition per page; the pages of the client's listing are checked as a
// set.
func TestPaginated(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
			s := startProxy(t, lockPolicy(t, lock, LockOptions{}),
				exampleArgv(t, fixtures.ModePaginated, g.serverArgs...), nil)
			cs, err := s.connect(ctx, "", nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			var names []string
			pages := 0
			params := &mcp.ListToolsParams{}
			for {
				res, err := cs.ListTools(ctx, params)
				if err != nil {
					t.Fatalf("tools/list page %d: %v", pages+1, err)
				}
				pages++
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				if res.NextCursor == "" {
					break
				}
				params = &mcp.ListToolsParams{Cursor: res.NextCursor}
			}
			if pages != len(fixtures.HonestToolNames()) || !slices.Equal(names, fixtures.HonestToolNames()) {
				t.Errorf("%d pages of tools %v", pages, names)
			}
			cs.Close()
			if err := s.wait(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// TestPaginatedRugPullBlocked: a change on any page of the proxy's own
// listing blocks the session.
func TestPaginatedRugPullBlocked(t *testing.T) {
	ctx := testContext(t)
	lock := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	s := startProxy(t, lockPolicy(t, lock, LockOptions{}), exampleArgv(t, fixtures.ModeRugPull, "--page-size", "1"), nil)
	if _, err := s.connect(ctx, "", nil); !isBlocked(err) {
		t.Fatalf("connect: %v, want the block error", err)
	}
	if b := asBlocked(s.wait()); b == nil || !b.Drift() {
		t.Errorf("Run: %v, want a drift block", b)
	}
}

// TestBadLockRefused: a lock changed by hand, truncated, or missing is
// refused before anything starts, naming the file, and is left untouched.
func TestBadLockRefused(t *testing.T) {
	good := writeTOFULock(t, exampleArgv(t, fixtures.ModeHonest))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		edit   func([]byte) []byte
		target error
	}{
		{"description edited", func(b []byte) []byte {
			return bytes.Replace(b, []byte("Search the notes"), []byte("Search the Notes"), 1)
		}, nil},
		{"lockDigest edited", func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"lockDigest": "sha256:`)) + len(`"lockDigest": "sha256:`)
			c := slices.Clone(b)
			c[i] ^= 1
			return c
		}, nil},
		{"approval edited", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"tofu"`), []byte(`"key"`), 1)
		}, nil},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, nil},
		{"missing", nil, ErrNoLock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.lock")
			var edited []byte
			if c.edit != nil {
				edited = c.edit(data)
				if bytes.Equal(edited, data) {
					t.Fatal("the edit changed nothing")
				}
				if err := os.WriteFile(path, edited, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := NewLockPolicy(path, LockOptions{})
			if err == nil {
				t.Fatal("the lock was accepted")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error does not name the file: %v", err)
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Errorf("error %v, want %v", err, c.target)
			}
			after, rerr := os.ReadFile(path)
			switch {
			case c.edit == nil && !errors.Is(rerr, fs.ErrNotExist):
				t.Errorf("a lock file appeared")
			case c.edit != nil && !bytes.Equal(after, edited):
				t.Errorf("the lock file was changed")
			}
		})
	}
}

// TestTOFUFirstUse: with --tofu and no lock, the first definitions are
// written to the lock and the session goes on; a second session against a
// changed server is blocked by that lock.
func TestTOFUFirstUse(t *testing.T) {
	ctx := testContext(t)
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	s := startProxy(t, lockPolicy(t, lock, LockOptions{TOFU: true}), exampleArgv(t, fixtures.ModeHonest), nil)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	l := lockPolicy(t, lock, LockOptions{}).Lock()
	if l == nil || l.Approval.Method != "tofu" || len(l.Definitions) != 8 {
		t.Fatalf("lock %+v", l)
	}
	s2 := startProxy(t, lockPolicy(t, lock, LockOptions{TOFU: true}), exampleArgv(t, fixtures.ModeRugPull), nil)
	if _, err := s2.connect(ctx, "", nil); !isBlocked(err) {
		t.Fatalf("connect to the changed server: %v, want the block error", err)
	}
	if b := asBlocked(s2.wait()); b == nil || !b.Drift() {
		t.Errorf("Run: %v, want a drift block", b)
	}
}
