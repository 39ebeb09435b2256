package difftest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestHostileHTTPServersThroughTheBridge runs every hostile Streamable
// HTTP server of the HTTP table behind the bridge (`mcpsign proxy --lock L
// -- URL`, as a host runs it), with both official clients on its stdio, and
// checks the proxy's oracle: either the session is blocked (exit 42 or 2,
// the lock untouched, nothing unapproved held) or the client holds exactly
// the lock. A row that official servers write (legal) must pass through.
// The HTTP table's rows with TLS need no other setup: the bridge refuses
// the untrusted certificate in one line.
func TestHostileHTTPServersThroughTheBridge(t *testing.T) {
	t.Parallel() // its rows share the -parallel slots with the other tables'
	mcpsign := fixtures.BuildMcpsign(t)
	l, lockData := honestHTTPLock(t)
	evil := evilHTTPServer(t)
	tsOK := tsClientIfAny(t)
	for _, r := range httpRows(evil.URL + "/mcp") {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			url := serveHTTPRow(t, r)
			var mu sync.Mutex
			passed := map[string]bool{}
			run := func(t *testing.T, client string, f func(argv []string) outcome) {
				w := &world{dir: t.TempDir(), lockBefore: lockData}
				w.lock, w.calls = filepath.Join(w.dir, "mcp.lock"), filepath.Join(w.dir, "calls")
				if err := os.WriteFile(w.lock, lockData, 0o600); err != nil {
					t.Fatal(err)
				}
				argv := append([]string{mcpsign, "proxy", "--lock", w.lock, "--check-timeout", checkTimeout.String(),
					"--shutdown-grace", shutdownGrace.String()}, r.args...)
				o := f(append(argv, "--", url))
				v := oracle(l, w, o, false, true)
				mu.Lock()
				passed[client] = len(v) == 0 && !o.blocked
				mu.Unlock()
				for _, s := range v {
					t.Errorf("%s client: %s", client, s)
				}
				t.Logf("%s client: blocked=%v (proxy exit %v), %d violations; held %s", client, o.blocked, deref(o.h.ExitCode), len(v), brief(o.h))
				if len(v) > 0 {
					t.Logf("%s client: proxy stderr:\n%s", client, o.h.Stderr)
				}
			}
			t.Run("go-sdk", func(t *testing.T) {
				run(t, "go-sdk", func(argv []string) outcome { return runGoCLI(t, argv, scenario{Call: greet}) })
			})
			if tsOK {
				t.Run("TypeScript", func(t *testing.T) {
					run(t, "TypeScript", func(argv []string) outcome {
						h := runTS(t, argv, scenario{Call: greet})
						return outcome{h: h, blocked: h.ExitCode != nil && (*h.ExitCode == 42 || *h.ExitCode == 2)}
					})
				})
			}
			if r.legal {
				for client, ok := range passed {
					if !ok {
						t.Errorf("the bridge did not let a legal server through to the %s client", client)
					}
				}
			}
		})
	}
}
