package front_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// The attacker's pass over the front (issue 30): each row is a way a
// hostile client or server tried to get past a bound or a check.

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// TestRejectedInitializeLeavesNoSession: an initialize the transport
// refuses (the client never learns the session id, so it can never DELETE
// it) must not leave a session, a relay and an upstream behind until the
// idle timeout: a client could fill the session cap with sessions nobody
// can close.
func TestRejectedInitializeLeavesNoSession(t *testing.T) {
	u := stdioExample(t, fixtures.ModeHonest)
	s := serve(t, u, lockOf(t, u), func(o *front.Options) { o.MaxSessions = 2 })
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"Last-Event-ID on a POST", map[string]string{"Last-Event-ID": "x_1"}},
		{"Mcp-Method header that contradicts the body", map[string]string{"Mcp-Method": "tools/call"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 { // past the cap of 2, were they kept
				req, _ := http.NewRequest("POST", s.url, strings.NewReader(initBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tc.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					t.Skipf("the transport took the initialize (%d): nothing to attack", resp.StatusCode)
				}
				if got := resp.Header.Get(front.HeaderSessionID); got != "" {
					t.Errorf("a refused initialize named a session %q", got)
				}
			}
			if n := counterSum(t, s.f, "mcpsign_front_sessions_open"); n != 0 {
				t.Errorf("sessions open after refused initializes = %v, want 0", n)
			}
			// Their relays stop as soon as they see the client gone.
			ctx := testContext(t)
			cs, err := connect(ctx, s.url, "2025-11-25")
			for deadline := time.Now().Add(3 * time.Second); err != nil && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				cs, err = connect(ctx, s.url, "2025-11-25")
			}
			if err != nil {
				t.Fatalf("a real session after refused initializes: %v", err)
			}
			cs.Close()
		})
	}
}

// TestReadyProbesOnce: /readyz is often reachable by anyone who can reach
// the service; Ready calls that arrive together must not each start a
// relay (an upstream session, or a process for a stdio upstream): they
// share one probe.
func TestReadyProbesOnce(t *testing.T) {
	var inits atomic.Int32
	g := startGoSDKServerWrapped(t, time.Second, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				inits.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	u := g.upstream()
	s := serve(t, u, lockOf(t, u), nil)
	ctx := testContext(t)
	base := inits.Load() // lockOf's own session
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- s.f.Ready(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Ready: %v", err)
		}
	}
	if n := inits.Load() - base; n > 1 {
		t.Errorf("16 concurrent Ready calls started %d upstream sessions, want 1", n)
	}
}

// TestClosedSessionsCountUntilStopped: a session's upstream process is
// stopped after its session closes (stdin closed, then ShutdownGrace, then
// killed): until then it still counts against MaxSessions, else a client
// that opens and DELETEs sessions in a loop runs any number of processes
// at once. The upstream here lingers after its stdin closes, as a slow
// server does.
func TestClosedSessionsCountUntilStopped(t *testing.T) {
	pids := t.TempDir()
	server := fixtures.BuildExampleServer(t)
	script := `echo $$ > "` + pids + `/$$"; "$0" "$@"; sleep 30`
	u := upstream{name: "lingering", command: []string{"/bin/sh", "-c", script, server, "--mode", fixtures.ModeHonest}}
	lock := lockOf(t, stdioExample(t, fixtures.ModeHonest))
	const max = 2
	s := serve(t, u, lock, func(o *front.Options) { o.MaxSessions = max })
	ctx := testContext(t)
	for _, tc := range []struct {
		name      string
		stateless bool
	}{
		{"open and DELETE sessions", false},
		{"stateless requests", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := 0
			for range 3 * max {
				if tc.stateless {
					body := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
					if resp := post(t, s.url, "", body); resp.StatusCode == http.StatusOK {
						served++
					}
				} else if cs, err := connect(ctx, s.url, "2025-11-25"); err == nil {
					served++
					cs.Close()
				}
				if n := alive(t, pids); n > max {
					t.Fatalf("%d upstream processes running at once after %d served, the cap is %d", n, served, max)
				}
			}
			if served == 0 {
				t.Fatal("nothing served")
			}
			// Let the lingering processes be stopped before the next row.
			deadline := time.Now().Add(5 * time.Second)
			for alive(t, pids) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// alive counts the processes whose pid files are in dir and still run.
func alive(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			n++
		}
	}
	return n
}

// zombie reports whether pid has exited but not been waited for.
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}
