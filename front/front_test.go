package front_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/service"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
)

func TestMain(m *testing.M) {
	fixtures.Main(m, fixtures.Program{Name: programReverseProxy, Main: reverseProxyMain})
}

const testTimeout = 30 * time.Second

// hangBound bounds a wait that a correct run ends at once (an answer, a
// cancellation reaching the upstream, a count falling to 0): long, so that
// a loaded machine's lateness never reaches it, and within testTimeout.
const hangBound = 20 * time.Second

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// upstream is where the front relays to: a stdio command or a URL.
type upstream struct {
	name    string
	command []string
	url     string
}

func (u upstream) spec() source.Spec { return source.Spec{Command: u.command, URL: u.url} }

func stdioExample(t testing.TB, mode string) upstream {
	return upstream{name: "stdio", command: []string{fixtures.BuildExampleServerNoRace(t), "--mode", mode}}
}

func httpExample(t testing.TB, mode string) upstream {
	return upstream{name: "http", url: fixtures.StartExampleHTTP(t, mode)}
}

// httpStateless is the example server over stateless HTTP, which serves
// 2026-07-28 requests.
func httpStateless(t testing.TB, mode string) upstream {
	return upstream{name: "http-stateless", url: fixtures.StartExampleHTTP(t, mode, "--stateless")}
}

var upstreams = []func(testing.TB, string) upstream{stdioExample, httpExample, httpStateless}

// lockOf pins what u serves (trusted on first use) to a new lock file.
func lockOf(t testing.TB, u upstream) string {
	t.Helper()
	snap, err := source.Load(testContext(t), u.spec(), source.Options{})
	if err != nil {
		t.Fatalf("listing %s: %v", u.name, err)
	}
	return writeLock(t, snap)
}

func writeLock(t testing.TB, snap *digest.Snapshot) string {
	t.Helper()
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.lock")
	if err := l.Write(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// served is a front on an httptest server, its endpoint at /mcp.
type served struct {
	f    *front.Front
	url  string
	logs *syncBuffer
	srv  *httptest.Server
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts a front relaying to u under the lock at lockPath.
func serve(t testing.TB, u upstream, lockPath string, mod func(*front.Options)) *served {
	t.Helper()
	logs := &syncBuffer{}
	o := front.Options{
		Logger: service.NewLogger(logs, slog.LevelDebug),
		Load: func(ctx context.Context) (proxy.Options, error) {
			p, err := proxy.NewLockPolicy(lockPath, proxy.LockOptions{})
			if err != nil {
				return proxy.Options{}, err
			}
			return proxy.Options{Command: u.command, URL: u.url, Policy: p, ShutdownGrace: time.Second, CheckTimeout: 10 * time.Second}, nil
		},
	}
	if mod != nil {
		mod(&o)
	}
	f, err := front.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", f)
	srv := httptest.NewServer(mux)
	s := &served{f: f, url: srv.URL + "/mcp", logs: logs, srv: srv}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.Drain(ctx); err != nil {
			t.Errorf("Drain: %v", err)
		}
		srv.Close()
		if t.Failed() {
			t.Logf("front logs:\n%s", logs.String())
		}
	})
	return s
}

// connect connects a go-sdk client to the front; protocol "" is the
// client's default (2026-07-28: server/discover, stateless requests).
func connect(ctx context.Context, url, protocol string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "front-test", Version: "0"}, nil)
	var so *mcp.ClientSessionOptions
	if protocol != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: false}, so)
}

func toolNames(t testing.TB, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func isBlocked(err error) bool {
	return err != nil && (strings.Contains(err.Error(), proxy.BlockedMessage) || strings.Contains(err.Error(), proxy.UncheckedMessage))
}

// TestGoSDKClients: go-sdk's client through the front, both protocol
// generations, to the example server over stdio and over Streamable HTTP:
// the client holds exactly the lock's tools and calls one.
func TestGoSDKClients(t *testing.T) {
	for _, up := range upstreams {
		u := up(t, fixtures.ModeHonest)
		lock := lockOf(t, u)
		s := serve(t, u, lock, nil)
		for _, protocol := range []string{"2025-11-25", "2025-06-18", ""} {
			t.Run(u.name+"/"+protocol, func(t *testing.T) {
				ctx := testContext(t)
				cs, err := connect(ctx, s.url, protocol)
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; protocol == "" && u.name != "http" && (got != "2026-07-28" || cs.ID() != "") {
					t.Errorf("the default client negotiated %s (session %q), want 2026-07-28 stateless", got, cs.ID())
				}
				if got, want := toolNames(t, ctx, cs), fixtures.HonestToolNames(); !slices.Equal(got, want) {
					t.Errorf("tools = %v, want %v", got, want)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
				if err != nil || res.IsError {
					t.Fatalf("tools/call: %v %+v", err, res)
				}
			})
		}
		if err := s.f.Ready(testContext(t)); err != nil {
			t.Errorf("Ready after honest sessions: %v", err)
		}
	}
}

// TestDriftBlocksAndMarks: a server that serves other definitions than the
// lock's is blocked before anything reaches the client, in every session
// and generation; the front is then not ready (drift) and counts the block.
func TestDriftBlocksAndMarks(t *testing.T) {
	for _, up := range upstreams {
		honest := up(t, fixtures.ModeHonest)
		lock := lockOf(t, honest)
		rug := up(t, fixtures.ModeRugPull)
		s := serve(t, rug, lock, nil)
		for _, protocol := range []string{"2025-11-25", ""} {
			t.Run(rug.name+"/"+protocol, func(t *testing.T) {
				ctx := testContext(t)
				cs, err := connect(ctx, s.url, protocol)
				if err == nil {
					defer cs.Close()
					_, err = cs.ListTools(ctx, nil)
				}
				if !isBlocked(err) {
					t.Fatalf("want the block's error, got %v", err)
				}
				// Requests after a block get the block's answer too.
				if cs != nil {
					if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{}}); !isBlocked(err) {
						t.Errorf("a call after the block: want the block's error, got %v", err)
					}
				}
			})
		}
		err := s.f.Ready(testContext(t))
		if !errors.Is(err, front.ErrDrifted) {
			t.Errorf("Ready after drift = %v, want ErrDrifted", err)
		}
		if n := counterSum(t, s.f, "mcpsign_front_blocks_total"); n < 2 {
			t.Errorf("mcpsign_front_blocks_total = %v, want at least 2", n)
		}
		if v := counterSum(t, s.f, "mcpsign_front_upstream_drifted"); v != 1 {
			t.Errorf("mcpsign_front_upstream_drifted = %v, want 1", v)
		}
	}
}

// counterSum is the sum of every series of the named metric.
func counterSum(t testing.TB, f *front.Front, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range f.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

// TestBadRequests: what the transport refuses, and how.
func TestBadRequests(t *testing.T) {
	u := httpExample(t, fixtures.ModeHonest)
	s := serve(t, u, lockOf(t, u), func(o *front.Options) { o.Load = withMax(o.Load, 4096) })
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	for _, tc := range []struct {
		name, method, session, body string
		want                        int
		wantBody                    string
	}{
		{"unknown session POST", "POST", "nosuchsession", init, http.StatusNotFound, "no such session"},
		{"unknown session GET", "GET", "nosuchsession", "", http.StatusNotFound, "no such session"},
		{"unknown session DELETE", "DELETE", "nosuchsession", "", http.StatusNotFound, "no such session"},
		{"batch", "POST", "", "[" + init + "]", http.StatusBadRequest, "batches are not supported"},
		{"not JSON", "POST", "", "{", http.StatusBadRequest, `"code":-32700`},
		{"duplicate member", "POST", "", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, http.StatusBadRequest, `"code":-32700`},
		{"oversized", "POST", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, http.StatusRequestEntityTooLarge, "larger than 4096"},
		{"request without session", "POST", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, http.StatusBadRequest, "no Mcp-Session-Id"},
		{"GET without session", "GET", "", "", http.StatusMethodNotAllowed, ""},
		{"PUT", "PUT", "", "", http.StatusMethodNotAllowed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, s.url, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.session != "" {
				req.Header.Set(front.HeaderSessionID, tc.session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("%s: got %d %q, want %d with %q", tc.name, resp.StatusCode, body, tc.want, tc.wantBody)
			}
		})
	}
}

func withMax(load func(context.Context) (proxy.Options, error), max int) func(context.Context) (proxy.Options, error) {
	return func(ctx context.Context) (proxy.Options, error) {
		o, err := load(ctx)
		o.MaxMessageBytes = max
		return o, err
	}
}

// TestSessionLifecycle: DELETE ends a session (its id is then unknown),
// the cap answers 503 with Retry-After, and the idle timeout closes a
// session and stops its upstream.
//
// The cap is checked under the default idle timeout and the idle timeout
// under a front of its own: with both in one front (700 ms), a loaded
// machine took longer than that to start the second session's upstream,
// the first session idled out meanwhile, and the third was let in.
func TestSessionLifecycle(t *testing.T) {
	u := stdioExample(t, fixtures.ModeHonest)
	lock := lockOf(t, u)
	s := serve(t, u, lock, func(o *front.Options) { o.MaxSessions = 2 })
	ctx := testContext(t)
	a, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	b, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(ctx, s.url, "2025-11-25"); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("a third session past the cap of 2: want 503, got %v", err)
	}
	resp := post(t, s.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the cap: got %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A stateless request is a relay too (a process, for a stdio server):
	// it counts against the same cap.
	modernReq := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	if resp := post(t, s.url, "", modernReq); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stateless request past the cap: got %d, want 503", resp.StatusCode)
	}
	id := a.ID()
	a.Close() // DELETE
	if resp := postSession(t, s.url, id, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after DELETE: got %d, want 404", resp.StatusCode)
	}
	b.Close()

	// The idle timeout: a session that receives no POST is closed. Waited
	// for without a fixed sleep (no POST, which would keep it alive): the
	// count of open sessions falls to 0 once the reaper closed it; without
	// the timeout it stays 1 and the wait runs out.
	idle := serve(t, u, lock, func(o *front.Options) { o.IdleTimeout = 700 * time.Millisecond })
	c, err := connect(ctx, idle.url, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !waitFor(testTimeout, func() bool { return counterSum(t, idle.f, "mcpsign_front_sessions_open") == 0 }) {
		t.Fatalf("sessions open = %v %s after connecting, want 0: the idle timeout of 700ms closed nothing", counterSum(t, idle.f, "mcpsign_front_sessions_open"), testTimeout)
	}
	if resp := postSession(t, idle.url, c.ID(), `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after the idle timeout: got %d, want 404", resp.StatusCode)
	}
	if !waitFor(testTimeout, func() bool { return counterSum(t, s.f, "mcpsign_front_sessions_open") == 0 }) {
		t.Errorf("sessions open = %v after both were deleted, want 0", counterSum(t, s.f, "mcpsign_front_sessions_open"))
	}
}

func post(t testing.TB, url, session, body string) *http.Response {
	t.Helper()
	return postSession(t, url, session, body)
}

func postSession(t testing.TB, url, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(front.HeaderSessionID, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestConcurrentSessions: 64 go-sdk sessions at once through one front to
// one HTTP upstream, each listing and calling.
func TestConcurrentSessions(t *testing.T) {
	u := httpExample(t, fixtures.ModeHonest)
	s := serve(t, u, lockOf(t, u), nil)
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			protocol := "2025-11-25"
			if i%4 == 0 {
				protocol = "" // stateless
			}
			cs, err := connect(ctx, s.url, protocol)
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			if len(res.Tools) != len(fixtures.HonestToolNames()) {
				errs <- errors.New("wrong tools")
				return
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMetricsNamed: every collector is named mcpsign_front_… and gathers.
func TestMetricsNamed(t *testing.T) {
	u := stdioExample(t, fixtures.ModeHonest)
	s := serve(t, u, lockOf(t, u), nil)
	reg := prometheus.NewPedanticRegistry()
	for _, c := range s.f.Collectors() {
		reg.MustRegister(c)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no metrics gathered")
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "mcpsign_front_") {
			t.Errorf("metric %s is not named mcpsign_front_…", mf.GetName())
		}
	}
}

// TestHostileServers: the hostile example servers of the proxy's tables
// (a rug pull, a two-faced server that answers the proxy's listing
// honestly and the client's otherwise, one that changes after a call)
// through the front, sessions and stateless: every tools/list the client
// receives is exactly the lock's, or the block's error, and a server that
// shows the client another list is blocked.
func TestHostileServers(t *testing.T) {
	for _, up := range upstreams {
		lock := lockOf(t, up(t, fixtures.ModeHonest))
		for _, mode := range []string{fixtures.ModeRugPull, fixtures.ModeHonestProbe, fixtures.ModeListChanged} {
			u := up(t, mode)
			s := serve(t, u, lock, nil)
			for _, protocol := range []string{"2025-11-25", ""} {
				t.Run(u.name+"/"+mode+"/"+protocol, func(t *testing.T) {
					ctx := testContext(t)
					blocked := false
					check := func(what string, names []string, err error) {
						switch {
						case isBlocked(err):
							blocked = true
						case err != nil:
							t.Errorf("%s: %v", what, err)
						case names != nil && !slices.Equal(names, fixtures.HonestToolNames()):
							t.Errorf("%s: the client received tools %v, not the lock's", what, names)
						}
					}
					cs, err := connect(ctx, s.url, protocol)
					check("connect", nil, err)
					if err != nil {
						return
					}
					defer cs.Close()
					for i := range 3 {
						res, err := cs.ListTools(ctx, nil)
						var names []string
						if err == nil {
							for _, tl := range res.Tools {
								names = append(names, tl.Name)
							}
							slices.Sort(names)
						}
						check("tools/list", names, err)
						_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
						check("tools/call", nil, err)
						if i == 0 && mode == fixtures.ModeListChanged {
							time.Sleep(200 * time.Millisecond) // the list_changed arrives
						}
					}
					if !blocked && mode != fixtures.ModeListChanged {
						t.Errorf("%s was never blocked", mode)
					}
				})
			}
		}
	}
}

// TestRollForwardOnceForAllSessions: the server changed, and its publisher
// signed the change: several sessions that start at once all go on with
// the new definitions, and the lock is rolled forward exactly once (one
// write, recorded once), not once per session.
func TestRollForwardOnceForAllSessions(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	lockPath := filepath.Join(dir, "mcp.lock")
	bundle := filepath.Join(dir, "server.sigstore.json")
	honest, rug := stdioExample(t, fixtures.ModeHonest), stdioExample(t, fixtures.ModeRugPull)
	honestSnap, err := source.Load(ctx, honest.spec(), source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rugSnap, err := source.Load(ctx, rug.spec(), source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alice := publisher.New(t)
	alice.Sign(t, honestSnap, bundle)
	vf := pinbundle.Verifier(alice.Verifier, bundle)
	v, err := vf(ctx, honestSnap)
	if err != nil {
		t.Fatal(err)
	}
	l, err := pin.NewLock(honestSnap, v.Approval)
	if err != nil {
		t.Fatal(err)
	}
	l.Server = v.Server
	if err := l.Write(ctx, lockPath); err != nil {
		t.Fatal(err)
	}
	alice.Sign(t, rugSnap, bundle) // the publisher releases the change
	var mu sync.Mutex
	writes := 0
	s := serve(t, rug, lockPath, func(o *front.Options) {
		o.Load = func(ctx context.Context) (proxy.Options, error) {
			p, err := proxy.NewLockPolicy(lockPath, proxy.LockOptions{Verify: vf, Record: func(context.Context, *pin.Lock, *pin.Lock) error {
				mu.Lock()
				writes++
				mu.Unlock()
				return nil
			}})
			if err != nil {
				return proxy.Options{}, err
			}
			return proxy.Options{Command: rug.command, Policy: p, ShutdownGrace: time.Second}, nil
		}
	})
	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			protocol := "2025-11-25"
			if i%2 == 1 {
				protocol = ""
			}
			cs, err := connect(ctx, s.url, protocol)
			if err != nil {
				t.Errorf("session %d: %v", i, err)
				return
			}
			defer cs.Close()
			if got := toolNames(t, ctx, cs); !slices.Equal(got, sorted(fixtures.RugPullToolNames())) {
				t.Errorf("session %d: tools %v", i, got)
			}
		}()
	}
	wg.Wait()
	if writes != 1 {
		t.Errorf("the lock was written %d times, want once", writes)
	}
	if got := counterSum(t, s.f, "mcpsign_front_roll_forwards_total"); got != 1 {
		t.Errorf("mcpsign_front_roll_forwards_total = %v, want 1", got)
	}
	now, err := pin.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := now.Lookup(digest.KindTool, "run_command"); !ok {
		t.Error("the lock was not rolled forward")
	}
	if err := s.f.Ready(ctx); err != nil {
		t.Errorf("Ready after the roll-forward: %v", err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestStatelessListen: subscriptions/listen, whose answer never ends, is
// answered at once by the front (a session is the way to be told of list
// changes), not left hanging.
func TestStatelessListen(t *testing.T) {
	u := httpStateless(t, fixtures.ModeHonest)
	s := serve(t, u, lockOf(t, u), nil)
	req, _ := http.NewRequest("POST", s.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"id":7`) || !strings.Contains(string(body), "open a session") {
		t.Errorf("subscriptions/listen: %d %s", resp.StatusCode, body)
	}
}
