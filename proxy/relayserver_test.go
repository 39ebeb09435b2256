package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

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
			locked(r, func() {
				r.fromClient(inboundOf(t, ping))
				r.fromClient(inboundOf(t, strings.Replace(ping, `"id":1`, `"id":2`, 1)))
			})
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
		var stopped chan struct{}
		locked(r, func() {
			stopped = r.stopped
		})
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

// TestAnswerToNothingPending: an answer whose id is no pending request's
// blocks the session (docs/PROXY.md, "Response ids"); the answer to a
// pending one is relayed.
func TestAnswerToNothingPending(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		id      string
		blocked bool
	}{
		{"the pending request's id", "1", false},
		{"another id", "2", true},
		{"a loose form of the id", "1.0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, out := connectedRelay(t, 1<<20)
			if err := r.pending.Add([]byte("1"), &pendingReq{id: []byte("1"), method: "tools/call"}); err != nil {
				t.Fatal(err)
			}
			answer := `{"jsonrpc":"2.0","id":` + tc.id + `,"result":{"content":[]}}`
			m := &inbound{line: []byte(answer + "\n")}
			var err error
			if m.env, err = mcpwire.ParseFromServer([]byte(answer)); err != nil {
				t.Fatal(err)
			}
			var blocked bool
			locked(r, func() {
				r.serverResponse(m)
				blocked = r.blocked != nil
			})
			r.flush()
			if blocked != tc.blocked {
				t.Errorf("blocked = %v, want %v", blocked, tc.blocked)
			}
			if relayed := out.String() == answer+"\n"; relayed == tc.blocked {
				t.Errorf("the client got %q", out.String())
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
			locked(r, func() {
				r.handshaking = true
				r.awaitHandshake(mcpwire.MethodInitialize)
				tc.then(r)
			})
			select {
			case <-r.wake: // the timer's callback decided
			case <-time.After(testTimeout):
				t.Fatal("the handshake's timer did not fire")
			}
			var b *BlockedError
			locked(r, func() {
				b = r.blocked
			})
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
	var running bool
	var heldServer, heldClient int
	locked(r, func() {
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
		running = r.running != nil
		heldServer, heldClient = len(r.heldServer), len(r.heldClient)
	})
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

// locked calls f with r's mutex held, as a reader or a check does; a
// panic in f (a broken relay) releases it, so that the test's cleanup
// does not wait for it forever.
func locked(r *relay, f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// TestBlockAnswerData: the error data of the block's answer names the
// reason, and the policy's findings only when it has some.
func TestBlockAnswerData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		findings []string
		data     string
	}{
		{"a refusal without findings", nil, `"data":{"reason":"the start-up listing"}`},
		{"a refusal with findings", []string{"tool-changed"}, `"data":{"findings":["tool-changed"],"reason":"the start-up listing"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, out := connectedRelay(t, 1<<20)
			locked(r, func() {
				r.block(&BlockedError{What: "the start-up listing", Decision: &Decision{Findings: tc.findings}, subjectID: []byte("1")})
			})
			r.flush()
			if !strings.Contains(out.String(), tc.data) {
				t.Errorf("the client got %q, want %s", out.String(), tc.data)
			}
		})
	}
}

// TestInterruptedAnswers: an interrupted session answers every request
// still waiting, the one a running check holds the answer of among them,
// with InterruptedCode; a blocked one has answered them all already.
func TestInterruptedAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		blocked bool
		want    []string // ids answered with InterruptedCode
	}{
		{"waiting requests and the check's subject", false, []string{"1", "7"}},
		{"blocked already", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, out := bareRelay(1 << 20)
			r.side = newSideQueue()
			defer r.side.close(time.Second)
			if err := r.pending.Add([]byte("1"), &pendingReq{id: []byte("1"), method: "tools/call"}); err != nil {
				t.Fatal(err)
			}
			r.running = &task{subjID: []byte("7")}
			if tc.blocked {
				r.blocked = &BlockedError{What: "x"}
			}
			r.interrupted(errors.New("interrupted by SIGINT"))
			r.flush()
			got := strings.Count(out.String(), `"code":`+strconv.Itoa(InterruptedCode))
			if got != len(tc.want) {
				t.Errorf("the client got %q, want %d answers with %d", out.String(), len(tc.want), InterruptedCode)
			}
			for _, id := range tc.want {
				if !strings.Contains(out.String(), `"id":`+id+`,"error"`) {
					t.Errorf("request %s not answered: %q", id, out.String())
				}
			}
		})
	}
}
