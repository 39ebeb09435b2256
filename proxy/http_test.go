package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

// The bridge: the proxy in front of a Streamable HTTP server (the example
// server behind go-sdk's mcp.NewStreamableHTTPHandler on 127.0.0.1), with
// go-sdk as the stdio client.

// startBridge runs Run against url in the background on pipes.
func startBridge(t *testing.T, policy Policy, url string, mod func(*Options)) *session {
	t.Helper()
	// A transport of the session's own, not http.DefaultTransport's pool:
	// every httptest.Server.Close of a test running beside it closes that
	// pool's idle connections, and a request that had just taken one
	// failed ("http: CloseIdleConnections called", seen in a loaded stress
	// run of TestBridgeHostile). The proxy itself never closes them.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return startProxy(t, policy, nil, func(o *Options) {
		o.Command, o.URL = nil, url
		o.HTTPClient = &http.Client{Transport: tr}
		if mod != nil {
			mod(o)
		}
	})
}

// httpLock pins what the server at url serves (listed by the source
// package) to a lock.
func httpLock(t *testing.T, url string) string {
	t.Helper()
	return httpLockTB(t, url)
}

func httpLockTB(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	snap, err := source.Load(ctx, source.Spec{URL: url}, source.Options{})
	if err != nil {
		t.Fatalf("listing %s: %v", url, err)
	}
	return writeTOFULockOf(t, snap)
}

func TestBridgeHonest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		protocol string
	}{
		{"sessions", nil, ""},
		{"legacy 2025-06-18", []string{"--protocol-versions", "2025-06-18"}, "2025-06-18"},
		{"stateless 2026-07-28", []string{"--stateless"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := fixtures.StartExampleHTTP(t, "honest", tc.args...)
			lock := httpLock(t, url)
			s := startBridge(t, lockPolicy(t, lock, LockOptions{}), url, nil)
			ctx := testContext(t)
			cs, err := s.connect(ctx, tc.protocol, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if got, want := strings.Join(names, ","), strings.Join(fixtures.HonestToolNames(), ","); got != want {
				t.Errorf("tools %s, want %s", got, want)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
			cs.Close()
			if err := s.wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

// A server that drifts after the first call and announces it on the GET
// stream: the proxy lists again, refuses, and blocks.
func TestBridgeListChangedOnGETStream(t *testing.T) {
	t.Parallel()
	url := fixtures.StartExampleHTTP(t, "list-changed")
	lock := httpLock(t, url)
	s := startBridge(t, lockPolicy(t, lock, LockOptions{}), url, nil)
	ctx := testContext(t)
	changed := make(chan struct{}, 1)
	cs, err := s.connect(ctx, "", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	// The server drifts and says list_changed on its GET stream while it
	// answers this call, so the answer races with the bridge's re-listing:
	// the call is answered, or already refused by the block.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
	if err != nil && !isBlocked(err) {
		t.Fatal(err)
	}
	// The block comes with the re-listing, before any notification.
	deadline := time.After(testTimeout)
	for blocked := isBlocked(err); !blocked; {
		_, err := cs.ListTools(ctx, nil)
		if blocked = isBlocked(err); blocked {
			break
		}
		select {
		case <-changed:
			t.Fatal("the client received list_changed: the proxy should have blocked first")
		case <-deadline:
			t.Fatal("no block")
		case e := <-s.events:
			_ = e
		}
	}
	select {
	case <-changed:
		t.Fatal("the client received list_changed: the proxy should have blocked first")
	default:
	}
	cs.Close()
	b := asBlocked(s.wait())
	if b == nil || !b.Drift() {
		t.Fatalf("want a drift block, got %v\n%s", b, s.stderr.String())
	}
	// The proxy runs no server at a URL: it closes the session.
	if out := s.stderr.String(); !strings.Contains(out, "mcpsign proxy: the session with the server was closed; every request") || strings.Contains(out, "server was stopped") {
		t.Errorf("the block report:\n%s", out)
	}
}

func TestBridgeUnreachable(t *testing.T) {
	t.Parallel()
	lock := writeTOFULock(t, exampleArgv(t, "honest"))
	s := startBridge(t, lockPolicy(t, lock, LockOptions{}), "http://127.0.0.1:1/mcp", nil)
	ctx := testContext(t)
	_, err := s.connect(ctx, "", nil)
	if err == nil {
		t.Fatal("connected to nothing")
	}
	err = s.wait()
	var ce *ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "cannot connect to http://127.0.0.1:1/mcp") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run: %v", err)
	}
	_ = io.EOF
}

// TestBridgeURLCredentialsNeverShown: a URL's user info and query may carry
// a token (ps never shows them): no error and nothing on stderr repeats
// them.
func TestBridgeURLCredentialsNeverShown(t *testing.T) {
	t.Parallel()
	lock := writeTOFULock(t, exampleArgv(t, "honest"))
	s := startBridge(t, lockPolicy(t, lock, LockOptions{}), "http://tok3n:pw@127.0.0.1:1/mcp?key=SECRETQ", nil)
	ctx := testContext(t)
	if _, err := s.connect(ctx, "", nil); err == nil {
		t.Fatal("connected to nothing")
	}
	err := s.wait()
	for _, out := range []string{err.Error(), s.stderr.String()} {
		if strings.Contains(out, "tok3n") || strings.Contains(out, "SECRETQ") {
			t.Errorf("the URL's user info or query is shown: %s", out)
		}
	}
	if !strings.Contains(err.Error(), "cannot connect to http://127.0.0.1:1/mcp") {
		t.Errorf("Run: %v", err)
	}
	for _, raw := range []string{"http://tok3n@example.com/mcp?key=SECRETQ", "ftp://tok3n@example.com/?key=SECRETQ", "http://tok3n@127.0.0.1/mcp?key=SECRETQ#x"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckURL(u, netguard.URLRule{})
		if err == nil || strings.Contains(err.Error(), "tok3n") || strings.Contains(err.Error(), "SECRETQ") {
			t.Errorf("CheckURL(%s): %v", raw, err)
		}
	}
}
