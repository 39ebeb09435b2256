package proxy

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
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
