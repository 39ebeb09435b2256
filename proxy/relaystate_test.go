package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestCancel: the client's notifications/cancelled is handled at once, by
// the requestId the strict reader reads (docs/PROXY.md, "Cancellation"): a
// held request it names is dropped, never sent, and answered with the
// proxy's error; one in flight is answered the same way, the cancellation
// sent on, and a listing in flight no longer holds; a cancellation that
// names nothing held or in flight (or the handshake) is dropped, said on
// stderr when its requestId cannot be read strictly. A request or another
// notification that merely carries a requestId goes the normal way: held
// behind what is held.
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
		pending   map[string]string // id: method ("tools/list" gates)
		cancel    string
		heldAfter int
		toServer  bool   // the cancellation is sent on
		answered  string // the id the proxy answers as cancelled, "" for none
		notice    bool   // said on stderr
	}{
		{"a held request is dropped and answered", []string{note, call}, nil, cancel5, 1, false, "5", false},
		{"another id: dropped", []string{call}, nil, cancel7, 1, false, "", false},
		{"a held notification with that id: dropped", []string{note}, nil, cancel5, 1, false, "", false},
		{"params not an object: dropped, said", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":[5]}`, 1, false, "", true},
		{"no requestId: dropped, said", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"x"}}`, 1, false, "", true},
		{"requestId twice: dropped, said", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"requestId":5}}`, 1, false, "", true},
		{"5.0 for 5: dropped", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5.0}}`, 1, false, "", false},
		{"a request of that name: held behind", []string{call}, nil, `{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":5}}`, 2, false, "", false},
		{"another notification naming the id: held behind", []string{call}, nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":5}}`, 2, false, "", false},
		{"a listing in flight no longer holds", nil, map[string]string{"7": "tools/list"}, cancel7, 0, true, "7", false},
		{"a call in flight: sent on", nil, map[string]string{"7": "tools/call"}, cancel7, 0, true, "7", false},
		{"the handshake: dropped", nil, map[string]string{"7": mcpwire.MethodInitialize}, cancel7, 0, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var toServer bytes.Buffer
			stderr := &fixtures.SyncBuffer{}
			r, out := bareRelay(1 << 20)
			r.toServer = newOutQueue(&toServer, 1<<40)
			r.o.Stderr, r.side = stderr, newSideQueue()
			r.checked = true
			for _, h := range tc.held {
				r.hold(&r.heldClient, inboundOf(t, h))
			}
			for id, method := range tc.pending {
				gating := method == "tools/list"
				if err := r.pending.Add([]byte(id), &pendingReq{id: []byte(id), method: method, gating: gating}); err != nil {
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
			r.side.close(time.Second)
			if len(r.heldClient) != tc.heldAfter {
				t.Errorf("%d held after, want %d", len(r.heldClient), tc.heldAfter)
			}
			want := before
			if tc.heldAfter > len(tc.held) {
				want = before + len(m.line)
			} else if tc.heldAfter < len(tc.held) {
				want = before - len(call) - 1
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
			got := out.String()
			if tc.answered == "" && got != "" {
				t.Errorf("the client got %q, want nothing", got)
			}
			if tc.answered != "" && (!strings.Contains(got, `"id":`+tc.answered+`,`) || !strings.Contains(got, cancelledMessage)) {
				t.Errorf("the client got %q, want request %s answered as cancelled", got, tc.answered)
			}
			if _, still := r.pending.Get([]byte("7")); still != (tc.pending != nil && !tc.toServer) {
				t.Errorf("request 7 pending after: %v", still)
			}
			if said := stderr.String() != ""; said != tc.notice {
				t.Errorf("stderr %q, want a notice: %v", stderr.String(), tc.notice)
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
	var held bool
	locked(r, func() {
		r.fromClient(inboundOf(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_command"}}`))
		held = len(r.heldClient) == 1
	})
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
