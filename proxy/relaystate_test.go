package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// bareRelay is a relay with no peers, for the bookkeeping of one step: what
// it writes to the client is in the returned buffer after flush.
func bareRelay(maxHeld int) (*relay, *bytes.Buffer) {
	out := &bytes.Buffer{}
	return &relay{
		o:        &Options{MaxHeldBytes: maxHeld, Stderr: io.Discard},
		toClient: newOutQueue(out, 1<<40),
		toServer: newOutQueue(io.Discard, 1<<40),
	}, out
}

// TestTrackInFlightBound: the proxy tracks at most MaxInFlight client
// requests at once; the next one is answered with an error, not tracked
// and not forwarded.
func TestTrackInFlightBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		before  int
		tracked bool
	}{
		{"one below the bound", MaxInFlight - 1, true},
		{"at the bound", MaxInFlight, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, out := bareRelay(1 << 20)
			for i := range tc.before {
				if err := r.pending.Add([]byte(strconv.Itoa(i)), &pendingReq{}); err != nil {
					t.Fatal(err)
				}
			}
			env := mcpwire.Message{Kind: mcpwire.KindRequest, ID: []byte(`"next"`), Method: "tools/call"}
			got := r.track(&env)
			r.toClient.flush()
			if got != tc.tracked {
				t.Errorf("track = %v, want %v", got, tc.tracked)
			}
			if _, pending := r.pending.Get(env.ID); pending != tc.tracked {
				t.Errorf("pending = %v, want %v", pending, tc.tracked)
			}
			if refused := strings.Contains(out.String(), "too many requests in flight"); refused == tc.tracked {
				t.Errorf("answered the client %q, want an answer: %v", out.String(), !tc.tracked)
			}
		})
	}
}

// TestGateStateOf: the state the gate reads is the relay's own, field by
// field: a message is "behind held ones" only when one is held and it
// just arrived, and a listing holds only while one is in flight.
func TestGateStateOf(t *testing.T) {
	t.Parallel()
	held := []*inbound{{line: []byte("{}\n")}}
	for _, tc := range []struct {
		name     string
		set      func(r *relay)
		arriving bool
		want     gateState
	}{
		{"a new session", func(*relay) {}, true, gateState{}},
		{"nothing held, arriving", func(r *relay) { r.checked = true }, true, gateState{checked: true}},
		{"one held, arriving", func(r *relay) { r.heldClient = held }, true, gateState{heldBefore: true}},
		{"one held, the drain's retry", func(r *relay) { r.heldClient = held }, false, gateState{}},
		{"one listing in flight", func(r *relay) { r.listsInFlight = 1 }, true, gateState{listsInFlight: true}},
		{"a check runs", func(r *relay) { r.running = &task{} }, true, gateState{checkRunning: true}},
		{"blocked", func(r *relay) { r.blocked = &BlockedError{} }, true, gateState{blocked: true}},
		{"handshaking, the client's initialized to drop", func(r *relay) { r.handshaking, r.dropInitialized = true, true }, true, gateState{handshaking: true, dropInitialized: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := bareRelay(1 << 20)
			tc.set(r)
			if got := r.gateStateOf(tc.arriving); got != tc.want {
				t.Errorf("gateStateOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// inboundOf parses a client line as the relay's reader does.
func inboundOf(t *testing.T, line string) *inbound {
	t.Helper()
	m := &inbound{line: []byte(line + "\n")}
	m.env, m.perr = mcpwire.Parse([]byte(line))
	return m
}

// TestCancel: the client's notifications/cancelled drops the request it
// names while that is held (the server never sees it, the client expects
// no answer), and ends the hold of a listing in flight; otherwise it goes
// the normal way, held behind what is held (docs/PROXY.md, "Order: exactly
// one answer per request").
func TestCancel(t *testing.T) {
	t.Parallel()
	const (
		call    = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`
		note    = `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"requestId":5}}`
		cancel5 = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`
		cancel7 = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`
	)
	for _, tc := range []struct {
		name      string
		held      []string
		pending   map[string]bool // id: gating
		cancel    string
		heldAfter int
		toServer  bool // the cancellation is sent on
	}{
		{"a held request is dropped", []string{note, call}, nil, cancel5, 1, false},
		{"another id: held behind", []string{call}, nil, cancel7, 2, false},
		{"a held notification with that id: held behind", []string{note}, nil, cancel5, 2, false},
		{"params not an object: held behind", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":[5]}`, 2, false},
		{"no requestId: held behind", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"x"}}`, 2, false},
		{"a request of that name: held behind", []string{call}, nil, `{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":5}}`, 2, false},
		{"another notification naming the id: held behind", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":5}}`, 2, false},
		{"a listing in flight no longer holds", nil, map[string]bool{"7": true}, cancel7, 0, true},
		{"a call in flight: sent on", nil, map[string]bool{"7": false}, cancel7, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var toServer bytes.Buffer
			r, _ := bareRelay(1 << 20)
			r.toServer = newOutQueue(&toServer, 1<<40)
			r.checked = true
			for _, h := range tc.held {
				r.hold(&r.heldClient, inboundOf(t, h))
			}
			for id, gating := range tc.pending {
				if err := r.pending.Add([]byte(id), &pendingReq{id: []byte(id), gating: gating}); err != nil {
					t.Fatal(err)
				}
				if gating {
					r.listsInFlight++
				}
			}
			m := inboundOf(t, tc.cancel)
			before := r.heldBytes
			r.fromClient(m)
			r.flush()
			if len(r.heldClient) != tc.heldAfter {
				t.Errorf("%d held after, want %d", len(r.heldClient), tc.heldAfter)
			}
			want := before + len(m.line)
			if tc.heldAfter < len(tc.held) {
				want = before - len(call) - 1
			} else if tc.heldAfter == len(tc.held) {
				want = before
			}
			if r.heldBytes != want {
				t.Errorf("heldBytes %d after, want %d", r.heldBytes, want)
			}
			if r.listsInFlight != 0 {
				t.Errorf("listsInFlight %d after, want 0", r.listsInFlight)
			}
			if sent := toServer.String() == tc.cancel+"\n"; sent != tc.toServer {
				t.Errorf("sent to the server %q; the cancellation: %v, want %v", toServer.String(), sent, tc.toServer)
			}
		})
	}
}

// TestHoldBound: what is held while a check runs may reach MaxHeldBytes
// exactly; one byte more blocks the session, and every held request is
// answered with the block's error.
func TestHoldBound(t *testing.T) {
	t.Parallel()
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name    string
		max     int
		blocked bool
	}{
		{"held bytes at the bound", 2 * (len(ping) + 1), false},
		{"one byte over it", 2*(len(ping)+1) - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, out := connectedRelay(t, tc.max)
			r.running = &task{}
			r.mu.Lock()
			r.fromClient(inboundOf(t, ping))
			r.fromClient(inboundOf(t, strings.Replace(ping, `"id":1`, `"id":2`, 1)))
			r.mu.Unlock()
			r.flush()
			if got := r.blocked != nil; got != tc.blocked {
				t.Fatalf("blocked = %v, want %v", got, tc.blocked)
			}
			if !tc.blocked {
				if len(r.heldClient) != 2 || r.heldBytes != tc.max {
					t.Errorf("%d held, %d bytes; want 2, %d", len(r.heldClient), r.heldBytes, tc.max)
				}
				return
			}
			<-r.stopped
			if n := strings.Count(out.String(), `"code":`+strconv.Itoa(BlockedCode)); n != 2 || len(r.heldClient) != 0 {
				t.Errorf("%d held after the block, the client got %q; want both answered with %d", len(r.heldClient), out.String(), BlockedCode)
			}
		})
	}
}

// TestFromServerWhileChecking: while a check holds the server's traffic,
// only a ping and roots/list reach the client (the server may wait for
// their answers before it answers the proxy's listing), and only when
// nothing of the server's is held before them: the order stays the
// server's.
func TestFromServerWhileChecking(t *testing.T) {
	t.Parallel()
	const (
		ping     = `{"jsonrpc":"2.0","id":"s1","method":"ping"}`
		roots    = `{"jsonrpc":"2.0","id":"s2","method":"roots/list"}`
		sampling = `{"jsonrpc":"2.0","id":"s3","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
	)
	for _, tc := range []struct {
		name    string
		running bool
		held    []string
		msg     string
		relayed bool
	}{
		{"a ping passes a check", true, nil, ping, true},
		{"roots/list passes a check", true, nil, roots, true},
		{"sampling is held", true, nil, sampling, false},
		{"a notification is held", true, nil, progress, false},
		{"a ping behind a held message is held", true, []string{progress}, ping, false},
		{"no check: sampling goes on", false, nil, sampling, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, out := bareRelay(1 << 20)
			r.checked = true
			r.clientCaps = readClientCaps([]byte(`{"roots":{},"sampling":{}}`))
			if tc.running {
				r.running = &task{}
			}
			for _, h := range tc.held {
				r.hold(&r.heldServer, inboundOf(t, h))
			}
			m := &inbound{line: []byte(tc.msg + "\n")}
			var err error
			if m.env, err = mcpwire.ParseFromServer([]byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			r.fromServer(m)
			r.flush()
			if got := out.String() == tc.msg+"\n"; got != tc.relayed {
				t.Errorf("the client got %q; relayed: %v, want %v", out.String(), got, tc.relayed)
			}
			if held := len(r.heldServer) == len(tc.held)+1; held == tc.relayed {
				t.Errorf("%d server messages held, want it held: %v", len(r.heldServer), !tc.relayed)
			}
		})
	}
}

// TestClientMessageApplied: what the relay does with each step the gate
// decides for a client message once the session is checked: who gets the
// message or the proxy's answer, and what stderr says.
func TestClientMessageApplied(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		line        string
		dropInit    bool
		toServer    string
		toClient    string // a part of it
		stderr      string // a part of it; "" for nothing
		dropInitEnd bool
	}{
		{"not strict JSON-RPC: dropped, said on stderr", `{"jsonrpc":"2.0","method":`, false, "", "", "dropped a message from the client that is not strict JSON-RPC", false},
		{"a batch: answered with id null", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false, "", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`, "", false},
		{"the client's initialized after the proxy's: dropped once", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, "", "", "", false},
		{"a blank line: forwarded", `  `, false, "  \n", "", "", false},
		{"a ping: forwarded", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, false, `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", "", "", false},
		{"a notification: forwarded", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false, `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", "", "", false},
		{"a listing: forwarded, holds what follows", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var toServer bytes.Buffer
			stderr := &fixtures.SyncBuffer{}
			r, out := bareRelay(1 << 20)
			r.toServer = newOutQueue(&toServer, 1<<40)
			r.o.Stderr, r.side = stderr, newSideQueue()
			r.checked, r.dropInitialized = true, tc.dropInit
			m := inboundOf(t, tc.line)
			if strings.TrimSpace(tc.line) == "" {
				m = &inbound{line: []byte(tc.line + "\n"), blank: true}
			}
			if !r.clientMessage(m, true) {
				t.Fatal("held")
			}
			r.flush()
			r.side.close(time.Second)
			if toServer.String() != tc.toServer {
				t.Errorf("the server got %q, want %q", toServer.String(), tc.toServer)
			}
			if got := out.String(); (tc.toClient == "") != (got == "") || !strings.Contains(got, tc.toClient) {
				t.Errorf("the client got %q, want %q", got, tc.toClient)
			}
			if got := stderr.String(); (tc.stderr == "") != (got == "") || !strings.Contains(got, tc.stderr) {
				t.Errorf("stderr %q, want %q", got, tc.stderr)
			}
			// A request forwarded is pending; nothing else is.
			if _, tracked := r.pending.Get([]byte("1")); tracked != strings.Contains(tc.toServer, `"id":1`) || r.pending.Len() > 1 {
				t.Errorf("%d pending, request 1 among them: %v", r.pending.Len(), tracked)
			}
			if lists := r.listsInFlight == 1; lists != strings.Contains(tc.toServer, "tools/list") || r.listsInFlight > 1 {
				t.Errorf("listsInFlight %d after", r.listsInFlight)
			}
			if r.dropInitialized != tc.dropInitEnd {
				t.Errorf("dropInitialized = %v after, want %v", r.dropInitialized, tc.dropInitEnd)
			}
		})
	}
}

// TestPeerEnd: how a peer's end is taken (handle with an error). The
// server's side ending cleanly, or a remote server that could not be used,
// ends the session; any other error blocks it, unless a check runs, which
// then sees the server gone, except for a protocol violation or an
// oversized message, which block at once.
func TestPeerEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		server  bool
		err     error
		running bool
		blocked bool
	}{
		{"the server's end", true, io.EOF, false, false},
		{"a read error", true, errors.New("read failed"), false, true},
		{"a read error while a check runs", true, errors.New("read failed"), true, false},
		{"a protocol violation while a check runs", true, fmt.Errorf("%w: not JSON", mcpwire.ErrProtocol), true, true},
		{"an oversized message while a check runs", true, fmt.Errorf("%w: 2 MiB", mcpwire.ErrMessageTooLarge), true, true},
		{"a remote server that could not be used", true, &ConnectError{What: "the server could not be reached"}, false, false},
		{"the client's end", false, io.EOF, false, false},
		{"the client's read error", false, errors.New("read failed"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := connectedRelay(t, 1<<20)
			if tc.running {
				r.running = &task{}
			}
			if r.handle(nil, tc.err, tc.server) {
				t.Error("handle reports more may follow a peer's end")
			}
			if got := r.blocked != nil; got != tc.blocked {
				t.Errorf("blocked = %v, want %v", got, tc.blocked)
			}
			if r.serverEOF != tc.server || r.clientEOF == tc.server {
				t.Errorf("serverEOF %v clientEOF %v, want the %s's end", r.serverEOF, r.clientEOF, map[bool]string{true: "server", false: "client"}[tc.server])
			}
			if tc.server && r.ownClosed == nil {
				t.Error("the proxy's own calls are not failed")
			}
		})
	}
}

// connectedRelay is a bareRelay whose server is an in-process connection
// nobody serves (block stops it), with the side queue a block reports on.
func connectedRelay(t *testing.T, maxHeld int) (*relay, *bytes.Buffer) {
	t.Helper()
	_, proxyEnd := mcp.NewInMemoryTransports()
	conn, err := TransportUpstream(proxyEnd).Connect(testContext(t), UpstreamEnv{MaxMessageBytes: 1 << 10, Stderr: io.Discard, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, out := bareRelay(maxHeld)
	r.c, r.side, r.o.OnEvent, r.wake = conn, newSideQueue(), func(Event) {}, make(chan struct{}, 1)
	t.Cleanup(func() {
		r.mu.Lock()
		stopped := r.stopped
		r.mu.Unlock()
		if stopped != nil {
			<-stopped
		}
		conn.Stop(time.Second)
		r.side.close(time.Second)
	})
	return r, out
}

// TestHandshakeAnswered: the server's answer to the client's initialize or
// server/discover, a result or an error, ends the handshake (and with it
// the wait its timer bounds); the answer to any other request does not.
func TestHandshakeAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method      string
		handshaking bool
	}{
		{mcpwire.MethodInitialize, false},
		{mcpwire.MethodDiscover, false},
		{mcpwire.MethodPing, true},
		{"tools/list", true},
	} {
		t.Run(tc.method, func(t *testing.T) {
			r, out := bareRelay(1 << 20)
			r.handshaking = true
			if err := r.pending.Add([]byte("1"), &pendingReq{id: []byte("1"), method: tc.method}); err != nil {
				t.Fatal(err)
			}
			const answer = `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`
			m := &inbound{line: []byte(answer + "\n")}
			var err error
			if m.env, err = mcpwire.ParseFromServer([]byte(answer)); err != nil {
				t.Fatal(err)
			}
			r.serverResponse(m)
			r.flush()
			if r.handshaking != tc.handshaking {
				t.Errorf("handshaking = %v after the answer, want %v", r.handshaking, tc.handshaking)
			}
			if out.String() != answer+"\n" {
				t.Errorf("the client got %q, want the answer", out.String())
			}
		})
	}
}

// TestHandshakeTimer: a handshake the server does not answer within
// CheckTimeout blocks the session, naming what was awaited; one answered,
// or a session whose run ended, is not blocked for it.
func TestHandshakeTimer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		then    func(r *relay)
		blocked bool
	}{
		{"unanswered", func(*relay) {}, true},
		{"answered", func(r *relay) { r.handshaking = false }, false},
		{"the run ended", func(r *relay) { r.ended.Store(true) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := connectedRelay(t, 1<<20)
			r.o.CheckTimeout = 10 * time.Millisecond
			r.mu.Lock()
			r.handshaking = true
			r.awaitHandshake(mcpwire.MethodInitialize)
			tc.then(r)
			r.mu.Unlock()
			select {
			case <-r.wake: // the timer's callback decided
			case <-time.After(testTimeout):
				t.Fatal("the handshake's timer did not fire")
			}
			r.mu.Lock()
			b := r.blocked
			r.mu.Unlock()
			if (b != nil) != tc.blocked {
				t.Fatalf("blocked: %v, want %v", b, tc.blocked)
			}
			if b != nil && b.What != "the server's answer to initialize" {
				t.Errorf("blocked for %q, want the server's answer to initialize", b.What)
			}
		})
	}
}

// TestDrainStopsAtACheck: a held list_changed that starts a re-listing
// closes the gate again in the middle of the drain: what is still held on
// both sides stays held, in order, for the drain after that check.
func TestDrainStopsAtACheck(t *testing.T) {
	t.Parallel()
	const (
		listChanged = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
		progress    = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
		call        = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`
	)
	r, out := connectedRelay(t, 1<<20)
	r.ctx, r.o.CheckTimeout = testContext(t), testTimeout
	r.ownClosed = errors.New("the server is gone") // the re-listing fails at once, after the checks below
	r.checked = true
	r.mu.Lock()
	for _, l := range []string{listChanged, progress} {
		m := &inbound{line: []byte(l + "\n")}
		var err error
		if m.env, err = mcpwire.ParseFromServer([]byte(l)); err != nil {
			t.Fatal(err)
		}
		r.hold(&r.heldServer, m)
	}
	r.hold(&r.heldClient, inboundOf(t, call))
	r.drain()
	running := r.running != nil
	heldServer, heldClient := len(r.heldServer), len(r.heldClient)
	r.mu.Unlock()
	r.tasks.Wait()
	r.flush()
	if !running {
		t.Fatal("the held list_changed started no re-listing")
	}
	if heldServer != 1 || heldClient != 1 {
		t.Errorf("held after the drain: %d of the server's, %d of the client's; want 1 and 1", heldServer, heldClient)
	}
	// The re-listing failed: the session is blocked and the held call
	// answered with the block's error, not lost.
	if !strings.Contains(out.String(), `"id":5,"error":{"code":`+strconv.Itoa(BlockedCode)) {
		t.Errorf("the client got %q, want the held call answered with %d", out.String(), BlockedCode)
	}
}

// TestRelistNamesTheSubject: a call of a tool the approved set lacks is
// held while the server is listed again; when that listing fails, the
// call is answered with the block's error and the report names the
// re-listing and what it was for.
func TestRelistNamesTheSubject(t *testing.T) {
	t.Parallel()
	r, out := connectedRelay(t, 1<<20)
	stderr := &fixtures.SyncBuffer{}
	r.ctx, r.o.CheckTimeout, r.o.Stderr = testContext(t), testTimeout, stderr
	r.ownClosed = errors.New("the server is gone") // the re-listing fails at once
	r.checked = true
	r.session = &mcpwire.Hello{}
	r.approved = newApprovedSet(&digest.Snapshot{Tools: []json.RawMessage{json.RawMessage(`{"name":"greet","inputSchema":{"type":"object"}}`)}})
	r.mu.Lock()
	r.fromClient(inboundOf(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_command"}}`))
	held := len(r.heldClient) == 1
	r.mu.Unlock()
	r.tasks.Wait()
	r.flush()
	r.side.close(time.Second)
	if !held {
		t.Error("the call was not held for the re-listing")
	}
	if !strings.Contains(out.String(), `"id":5,"error":{"code":`+strconv.Itoa(BlockedCode)) {
		t.Errorf("the client got %q, want the call answered with %d", out.String(), BlockedCode)
	}
	if want := `re-listing before tools/call of tool "run_command" could not be checked`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
