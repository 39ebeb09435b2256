package front_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/proxy"
)

// goSDKServer is a go-sdk StreamableHTTPHandler server with the tools the
// fault tests need: "fast" answers at once, "slow" after wait (or when its
// request ends), "hang" never (until its request ends).
type goSDKServer struct {
	srv       *httptest.Server
	started   chan struct{} // a slow or hanging call began
	cancelled chan struct{} // a hanging call's request was cancelled
}

func startGoSDKServer(t *testing.T, wait time.Duration) *goSDKServer {
	t.Helper()
	return startGoSDKServerWrapped(t, wait, nil)
}

// startGoSDKServerWrapped is startGoSDKServer with its handler wrapped.
func startGoSDKServerWrapped(t *testing.T, wait time.Duration, wrap func(http.Handler) http.Handler) *goSDKServer {
	t.Helper()
	g := &goSDKServer{started: make(chan struct{}, 64), cancelled: make(chan struct{}, 64)}
	release := make(chan struct{}) // go-sdk does not cancel a handler when its session is deleted
	s := mcp.NewServer(&mcp.Implementation{Name: "faults", Version: "1"}, nil)
	type noArgs struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "fast", Description: "answers at once"}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fast"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "answers after a while"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		g.started <- struct{}{}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-release:
			return nil, nil, errors.New("released")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "never answers"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		g.started <- struct{}{}
		select {
		case <-ctx.Done():
			g.cancelled <- struct{}{}
		case <-release:
		}
		return nil, nil, errors.New("released")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "answers with 12 MB of text"}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 12<<20)}}}, nil, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if wrap != nil {
		h = wrap(h)
	}
	g.srv = httptest.NewServer(h)
	t.Cleanup(g.srv.Close)
	t.Cleanup(func() { close(release) }) // before Close
	return g
}

func (g *goSDKServer) upstream() upstream { return upstream{name: "go-sdk-http", url: g.srv.URL} }

// session serves g through a front with a lock of g, and connects a go-sdk
// client to it (sessionOf).
func (g *goSDKServer) session(t *testing.T) (*served, context.Context, *mcp.ClientSession) {
	t.Helper()
	return sessionOf(t, g.upstream())
}

// sessionOf serves u through a front with a lock of u, and connects a
// go-sdk client to it (protocol 2025-11-25), closed when the test ends.
func sessionOf(t *testing.T, u upstream) (*served, context.Context, *mcp.ClientSession) {
	t.Helper()
	s := serve(t, u, lockOf(t, u), nil)
	ctx := testContext(t)
	cs, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return s, ctx, cs
}

func call(ctx context.Context, cs *mcp.ClientSession, name string) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", errors.New("tool error")
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// TestUpstreamCrashMidCall: the upstream goes away while a call is in
// flight: the client gets one error answer for it (not a hang), and the
// session is gone.
func TestUpstreamCrashMidCall(t *testing.T) {
	g := startGoSDKServer(t, time.Hour)
	_, ctx, cs := g.session(t)
	errc := make(chan error, 1)
	go func() {
		_, err := call(ctx, cs, "hang")
		errc <- err
	}()
	<-g.started
	// The upstream goes away: no new connection is accepted and every open
	// one is cut. Not g.srv.Close: it waits for the handlers in flight, and
	// the front's DELETE of the session waits in go-sdk for the hanging
	// call, which is released only at the test's cleanup (a deadlock seen
	// once in a full run).
	g.srv.Listener.Close()
	g.srv.CloseClientConnections()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "upstream ended before it answered") {
			t.Errorf("the call in flight: got %v, want the front's error", err)
		}
	case <-ctx.Done():
		t.Fatal("the call in flight was never answered")
	}
}

// TestClientLeavesMidCall: a client that gives up on a call (its POST
// ends) keeps its session: the next call is answered.
func TestClientLeavesMidCall(t *testing.T) {
	g := startGoSDKServer(t, time.Hour)
	u := g.upstream()
	s := serve(t, u, lockOf(t, u), nil)
	ctx := testContext(t)
	for _, protocol := range []string{"2025-11-25", ""} {
		cs, err := connect(ctx, s.url, protocol)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = call(short, cs, "hang")
		cancel()
		if err == nil {
			t.Fatalf("%q: a hanging call answered", protocol)
		}
		if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
			t.Errorf("%q: the call after the abandoned one: %q %v", protocol, got, err)
		}
		cs.Close()
	}
}

// abandonCalls makes n calls of the "hang" tool, one at a time, each with
// call (given a context of its own and the call's number), and gives each up
// once it reached the upstream (its context ends); the upstream must be
// told each was cancelled.
func (g *goSDKServer) abandonCalls(ctx context.Context, t *testing.T, n int, call func(context.Context, int) error) {
	t.Helper()
	for i := range n {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- call(cctx, i) }()
		select {
		case <-g.started:
		case <-ctx.Done():
			cancel()
			t.Fatal("the call never reached the upstream")
		}
		cancel()
		<-done
		select {
		case <-g.cancelled:
		case <-time.After(hangBound):
			t.Fatalf("call %d: the upstream was never told the call was cancelled", i)
		}
	}
}

// TestAbandonedCallsLeaveNoPending: a client whose POST ends while its
// call is in flight upstream (it disconnects: the front keeps no answer to
// resume, so none could reach it) or that cancels it
// (notifications/cancelled, which go-sdk's client sends when its context
// ends) leaves nothing in the session's table of unanswered requests,
// however many times, and the upstream is told (notifications/cancelled:
// its handler's context ends); the session goes on.
func TestAbandonedCallsLeaveNoPending(t *testing.T) {
	const n = 5
	for _, how := range []string{"disconnect", "cancel"} {
		t.Run(how, func(t *testing.T) {
			g := startGoSDKServer(t, time.Hour)
			s, ctx, cs := g.session(t)
			g.abandonCalls(ctx, t, n, func(cctx context.Context, i int) error {
				if how == "cancel" {
					_, err := call(cctx, cs, "hang")
					return err
				}
				return rawCall(cctx, s.url, cs.ID(), 100+i, "hang")
			})
			deadline := time.Now().Add(hangBound)
			for front.PendingCalls(s.f) != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := front.PendingCalls(s.f); got != 0 {
				t.Errorf("after %d abandoned calls the session holds %d as unanswered, want 0", n, got)
			}
			if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
				t.Errorf("the call after the abandoned ones: %q %v", got, err)
			}
		})
	}
}

// TestRefusedDuplicateCancelsNothing: a POST the transport refused (a
// request whose id is in flight: two POSTs with one id raced, and the
// front took the refused one's call as its own before the other's message
// reached the relay) never reached the relay: its end must not cancel
// the request in flight under that id, another POST's, which the upstream
// would then drop (notifications/cancelled) and whose client would wait
// for an answer that never comes. Failed on h30front2: the front cancelled
// it.
func TestRefusedDuplicateCancelsNothing(t *testing.T) {
	g := startGoSDKServer(t, time.Hour)
	s, ctx, cs := g.session(t)
	const id = 300
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rawCall(cctx, s.url, cs.ID(), id, "hang") }()
	select {
	case <-g.started: // the relay read it and sent it on
	case <-ctx.Done():
		t.Fatal("the call never reached the upstream")
	}
	// The racing duplicate's POST, refused by the transport (400: the id
	// is in flight), ends.
	front.PostEnded(s.f, cs.ID(), id, http.StatusBadRequest)
	select {
	case <-g.cancelled:
		t.Fatal("the end of a refused duplicate cancelled the request in flight under its id")
	case <-time.After(500 * time.Millisecond):
	}
	cancel()
	<-done
	select {
	case <-g.cancelled: // its own POST's end cancels it
	case <-time.After(hangBound):
		t.Fatal("the call was never cancelled once its own POST ended")
	}
}

// TestAbandonedUnreadCallLeavesNoTransportState: a request whose POST
// ended before the relay read it (the relay's reader was busy: here it
// waits for the upstream to accept a notification) is never relayed, and
// the client transport forgets it too: go-sdk keeps a stream and the
// request's id "in flight" for every request it did not see answered, so
// such a session grew by one stream each time, and a later request with
// the id was refused for good (400). Failed on h30front2: refused.
func TestAbandonedUnreadCallLeavesNoTransportState(t *testing.T) {
	const id = 700
	stalled, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32 // tools/call with the abandoned id the upstream received
	g := startGoSDKServerWrapped(t, time.Hour, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.Unmarshal(body, &m)
				switch {
				case m.Method == "notifications/roots/list_changed":
					close(stalled)
					<-release
				case m.Method == "tools/call" && string(m.ID) == fmt.Sprint(id):
					calls.Add(1)
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	s, ctx, cs := g.session(t)
	// The relay's reader sends the notification on and waits for the
	// upstream to accept it.
	if status, body := rawRequest(ctx, t, s.url, cs.ID(), `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); status/100 != 2 {
		t.Fatalf("the notification: %d %q", status, body)
	}
	select {
	case <-stalled:
	case <-time.After(hangBound):
		t.Fatal("the notification never reached the upstream")
	}
	// Meanwhile a call is posted and its client leaves before the relay
	// read it.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_ = rawCall(cctx, s.url, cs.ID(), id, "fast")
	cancel()
	// The front saw the POST end before the relay reads on: waited for,
	// not slept for (after a fixed 100 ms a loaded machine could still be
	// serving the POST, and the relay then relayed the call).
	if !waitFor(testTimeout, func() bool { return front.AbandonedCalls(s.f) == 1 }) {
		t.Fatalf("the front never saw the abandoned call's POST end (%d abandoned)", front.AbandonedCalls(s.f))
	}
	close(release)
	if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
		t.Fatalf("a call after the relay read on: %q %v", got, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the abandoned call reached the upstream %d times, want never", n)
	}
	var status int
	var body string
	for deadline := time.Now().Add(hangBound); ; {
		status, body = rawRequest(ctx, t, s.url, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fast","arguments":{}}}`, id))
		if status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != http.StatusOK || !strings.Contains(body, `"text":"fast"`) {
		t.Errorf("a request with the id of the abandoned, never relayed one: %d %q, want 200 and its answer", status, body)
	}
}

// TestCancelledCallsHoldNoUpstreamStream: an upstream that honours the
// front's notifications/cancelled as the TypeScript SDK's server does
// (the handler is aborted and nothing is answered: the request's event
// stream stays open, since the transport ends it only once its requests
// are answered) must not keep an upstream POST open per abandoned call:
// a client that calls and disconnects over and over would hold as many
// upstream connections (and a reader goroutine each) for as long as its
// session, and the relay and the client transport held each as in flight
// for as long. Failed on h30front2: every abandoned call's upstream POST
// stayed open.
func TestCancelledCallsHoldNoUpstreamStream(t *testing.T) {
	const n = 3
	var open atomic.Int32 // tools/call POSTs the upstream still serves
	g := startGoSDKServerWrapped(t, time.Hour, func(h http.Handler) http.Handler {
		return countCalls(honourCancellation(h), &open)
	})
	s, ctx, cs := g.session(t)
	g.abandonCalls(ctx, t, n, func(cctx context.Context, i int) error {
		return rawCall(cctx, s.url, cs.ID(), 800+i, "hang")
	})
	deadline := time.Now().Add(hangBound)
	for open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := open.Load(); got != 0 {
		t.Errorf("after %d cancelled calls the upstream still serves %d of their POSTs, want 0", n, got)
	}
	if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
		t.Errorf("the session after: %q %v", got, err)
	}
	// Nor does the relay or the client transport hold them as in flight:
	// the proxy answered each (an answer no one reads), as a server that
	// answers a cancelled request would have.
	var status int
	var body string
	for deadline := time.Now().Add(hangBound); ; {
		status, body = rawRequest(ctx, t, s.url, cs.ID(), `{"jsonrpc":"2.0","id":800,"method":"tools/call","params":{"name":"fast","arguments":{}}}`)
		if status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != http.StatusOK || !strings.Contains(body, `"text":"fast"`) {
		t.Errorf("a request with a cancelled call's id: %d %q, want 200 and its answer", status, body)
	}
}

// countCalls counts the tools/call POSTs h is serving.
func countCalls(h http.Handler, open *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				open.Add(1)
				defer open.Add(-1)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// honourCancellation wraps a go-sdk server (which answers a cancelled
// request with its handler's error) so that it answers none, as the
// TypeScript SDK's server: the POST of a tools/call whose id the client
// cancelled stays open without its answer until the client closes it.
func honourCancellation(h http.Handler) http.Handler {
	var mu sync.Mutex
	cancelled := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		if m.Method == "notifications/cancelled" {
			mu.Lock()
			cancelled[string(m.Params.RequestID)] = true
			mu.Unlock()
		}
		if m.Method != "tools/call" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		mu.Lock()
		held := cancelled[string(m.ID)]
		delete(cancelled, string(m.ID)) // a later request may have the id
		mu.Unlock()
		if held {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// rawRequest POSTs body into the session and returns the status and the
// body of the answer.
func rawRequest(ctx context.Context, t *testing.T, url, session, body string) (int, string) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, hangBound)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set(front.HeaderSessionID, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawCall POSTs a tools/call of name into the session with id and
// reads the answer until ctx ends (then the connection is closed: no
// notifications/cancelled, as a client that disconnects).
func rawCall(ctx context.Context, url, session string, id int, name string) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set(front.HeaderSessionID, session)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// TestDrain: a request in flight when Drain starts is answered (with its
// result when it ends in time, with the interruption error otherwise),
// later requests get 503, Ready says draining, and the sessions end.
func TestDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tool    string
		timeout time.Duration
		wantErr bool
	}{
		{"answered in time", "slow", 5 * time.Second, false},
		{"interrupted", "hang", 500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGoSDKServer(t, 300*time.Millisecond)
			s, ctx, cs := g.session(t)
			type answer struct {
				text string
				err  error
			}
			answers := make(chan answer, 2)
			go func() {
				text, err := call(ctx, cs, tc.tool)
				answers <- answer{text, err}
			}()
			<-g.started
			dctx, cancel := context.WithTimeout(ctx, tc.timeout)
			defer cancel()
			drained := make(chan error, 1)
			go func() { drained <- s.f.Drain(dctx) }()
			// Drain marks the front draining first: waited for, not slept
			// for (a 50 ms sleep let the initialize in before Drain's
			// goroutine ran, on a loaded machine).
			if !waitFor(testTimeout, func() bool { return front.Draining(s.f) }) {
				t.Fatal("Drain never started")
			}
			if resp := post(t, s.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("a new session while draining: %d, want 503", resp.StatusCode)
			}
			if err := s.f.Ready(ctx); !errors.Is(err, front.ErrDraining) {
				t.Errorf("Ready while draining = %v", err)
			}
			a := <-answers
			switch {
			case tc.wantErr && (a.err == nil || !strings.Contains(a.err.Error(), "interrupt") && !strings.Contains(a.err.Error(), "upstream ended")):
				t.Errorf("want the interruption's error, got %q %v", a.text, a.err)
			case !tc.wantErr && (a.err != nil || a.text != "slow"):
				t.Errorf("want the slow call's result, got %q %v", a.text, a.err)
			}
			err := <-drained
			if tc.wantErr != (err != nil) {
				t.Errorf("Drain = %v", err)
			}
			select {
			case a := <-answers:
				t.Errorf("a second answer: %+v", a)
			case <-time.After(100 * time.Millisecond):
			}
			if n := counterSum(t, s.f, "mcpsign_front_sessions_open"); n != 0 {
				t.Errorf("sessions open after Drain: %v", n)
			}
		})
	}
}

// TestReload: a configuration that does not load is refused and the one in
// force kept (sessions go on); one that loads replaces it for later
// sessions and clears the drift mark.
func TestReload(t *testing.T) {
	g := startGoSDKServer(t, 0)
	u := g.upstream()
	lock := lockOf(t, u)
	var broken atomic.Bool
	s := serve(t, u, lock, func(o *front.Options) {
		load := o.Load
		o.Load = func(ctx context.Context) (proxy.Options, error) {
			if broken.Load() {
				return proxy.Options{}, errors.New("policy.json: line 3: unexpected }")
			}
			return load(ctx)
		}
	})
	ctx := testContext(t)
	broken.Store(true)
	err := s.f.Reload(ctx)
	if err == nil || !strings.Contains(err.Error(), "kept") || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("Reload of a broken policy = %v", err)
	}
	cs, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatalf("a session after a failed reload: %v", err)
	}
	if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
		t.Errorf("call: %q %v", got, err)
	}
	cs.Close()
	broken.Store(false)
	if err := s.f.Reload(ctx); err != nil {
		t.Errorf("Reload: %v", err)
	}
	if n := counterSum(t, s.f, "mcpsign_front_reloads_total"); n != 1 {
		t.Errorf("reloads = %v, want 1", n)
	}
}

// authRecorder is an HTTP upstream that records the Authorization of every
// request it gets.
type authRecorder struct {
	h    http.Handler
	mu   sync.Mutex
	seen map[string]bool
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen[r.Header.Get("Authorization")] = true
	a.mu.Unlock()
	a.h.ServeHTTP(w, r)
}

// bearer adds an Authorization to every request of a client.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestPassAuthorization: a client's Authorization reaches an HTTP upstream
// only under PassAuthorization; either way it binds its session: a request
// of it with other credentials is refused.
func TestPassAuthorization(t *testing.T) {
	for _, pass := range []bool{false, true} {
		rec := &authRecorder{seen: map[string]bool{}}
		g := startGoSDKServerWrapped(t, 0, func(h http.Handler) http.Handler { rec.h = h; return rec })
		u := g.upstream()
		s := serve(t, u, lockOf(t, u), func(o *front.Options) { o.PassAuthorization = pass })
		ctx := testContext(t)
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: bearer("alice")}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := call(ctx, cs, "fast"); err != nil || got != "fast" {
			t.Fatalf("call: %q %v", got, err)
		}
		rec.mu.Lock()
		seen := rec.seen["Bearer alice"]
		rec.mu.Unlock()
		if seen != pass {
			t.Errorf("PassAuthorization %v: the upstream saw the client's Authorization: %v", pass, seen)
		}
		req, _ := http.NewRequest("POST", s.url, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(front.HeaderSessionID, cs.ID())
		req.Header.Set("Authorization", "Bearer mallory")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := http.StatusForbidden; resp.StatusCode != want { // bound either way (TestSessionBoundToCredentials)
			t.Errorf("PassAuthorization %v: a request of the session with other credentials: %d, want %d", pass, resp.StatusCode, want)
		}
		cs.Close()
	}
}

// TestClientNeverReads: a client that asks for a large answer and never
// reads it holds neither the front nor its own session's relay: other
// sessions are served meanwhile, the stalled write fails after
// WriteTimeout, and Drain ends in time.
func TestClientNeverReads(t *testing.T) {
	g := startGoSDKServer(t, 0)
	u := g.upstream()
	// Past its deadline Drain waits at most one grace (WriteTimeout +
	// ShutdownGrace + 1 s: 9.3 s here) for what is in flight, and one more
	// for the relays: a loaded machine's working Drain may use the first
	// (the relay stopping its upstream mid-call), while a stalled write
	// that WriteTimeout does not bound holds both. The bound below is the
	// deadline and one and a half graces: the two cases are a grace apart.
	const shutdownGrace = 8 * time.Second
	grace := 300*time.Millisecond + shutdownGrace + time.Second
	s := serve(t, u, lockOf(t, u), func(o *front.Options) {
		o.WriteTimeout = 300 * time.Millisecond
		load := o.Load
		o.Load = func(ctx context.Context) (proxy.Options, error) {
			po, err := load(ctx)
			po.ShutdownGrace = shutdownGrace
			return po, err
		}
	})
	ctx := testContext(t)
	cs, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A raw request on the session's id, whose answer is never read.
	addr := strings.TrimPrefix(strings.TrimSuffix(s.url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":"stall","method":"tools/call","params":{"name":"big","arguments":{}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", addr, cs.ID(), len(body), body)
	time.Sleep(500 * time.Millisecond) // the answer is being written, and stalls
	other, err := connect(ctx, s.url, "2025-11-25")
	if err != nil {
		t.Fatalf("another session while one client does not read: %v", err)
	}
	if got, err := call(ctx, other, "fast"); err != nil || got != "fast" {
		t.Errorf("another session's call: %q %v", got, err)
	}
	other.Close()
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	_ = s.f.Drain(dctx)
	if d := time.Since(start); d > 3*time.Second+grace*3/2 {
		t.Errorf("Drain took %v with a client that does not read", d)
	} else {
		t.Logf("Drain took %v", d)
	}
}
