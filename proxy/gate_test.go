package proxy

import (
	"errors"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// TestGate is the gate's table (docs/PROXY.md, "Order: exactly one answer
// per request"), apart from I/O: each row a session state and a client
// message, and the one step the gate must take.
func TestGate(t *testing.T) {
	open := gateState{checked: true}
	req := func(method string) gateMsg { return gateMsg{kind: mcpwire.KindRequest, method: method} }
	note := func(method string) gateMsg { return gateMsg{kind: mcpwire.KindNotification, method: method} }
	resp := gateMsg{kind: mcpwire.KindResponse}
	unapproved := &refused{code: codeInvalidParams, msg: "not approved", relist: true, subject: `tool "run_command"`}
	unreadableName := &refused{code: codeInvalidParams, msg: "cannot be read strictly"}
	withRefusal := func(m gateMsg, ref *refused, relisted bool) gateMsg { m.refusal, m.relisted = ref, relisted; return m }
	for _, tc := range []struct {
		name string
		s    gateState
		m    gateMsg
		want step
		code int
	}{
		{"blocked: a request gets the block's answer", gateState{blocked: true, checked: true}, req("tools/call"), stepAnswerBlocked, 0},
		{"blocked: even one naming what is not approved", gateState{blocked: true, checked: true}, withRefusal(req("tools/call"), unapproved, true), stepAnswerBlocked, 0},
		{"blocked: even while a check runs", gateState{blocked: true, checkRunning: true}, req("ping"), stepAnswerBlocked, 0},
		{"blocked: a notification is dropped", gateState{blocked: true}, note("notifications/initialized"), stepDrop, 0},
		{"blocked: a response is dropped", gateState{blocked: true}, resp, stepDrop, 0},
		{"blocked: a batch is dropped", gateState{blocked: true}, gateMsg{batch: true, unreadable: mcpwire.ErrBatch}, stepDrop, 0},
		{"a check runs: a request is held", gateState{checked: true, checkRunning: true}, req("tools/call"), stepHold, 0},
		{"a check runs: an unapproved call is held, not refused", gateState{checked: true, checkRunning: true}, withRefusal(req("tools/call"), unapproved, false), stepHold, 0},
		{"a check runs: a response goes on", gateState{checkRunning: true}, resp, stepForward, 0},
		{"a check runs: a ping is held", gateState{checkRunning: true}, req("ping"), stepHold, 0},
		{"before the check, behind held ones: initialize overtakes", gateState{heldBefore: true}, req("initialize"), stepForward, 0},
		{"before the check, behind held ones: ping overtakes", gateState{heldBefore: true, handshaking: true}, req("ping"), stepForward, 0},
		{"before the check, behind held ones: server/discover overtakes", gateState{heldBefore: true}, req("server/discover"), stepForward, 0},
		{"before the check, behind held ones: cancelled overtakes", gateState{heldBefore: true}, note("notifications/cancelled"), stepForward, 0},
		{"before the check, behind held ones: a call waits", gateState{heldBefore: true, handshaking: true}, req("tools/call"), stepHold, 0},
		{"after the check, behind held ones: even ping waits", gateState{checked: true, heldBefore: true}, req("ping"), stepHold, 0},
		{"a modern first request starts the check", gateState{}, req("tools/list"), stepStartUp, 0},
		{"during the handshake a request waits", gateState{handshaking: true}, req("tools/list"), stepHold, 0},
		{"before the check a notification waits", gateState{}, note("notifications/initialized"), stepHold, 0},
		{"the client's initialized after the proxy's is dropped", gateState{checked: true, dropInitialized: true}, note("notifications/initialized"), stepDropInitialized, 0},
		{"a listing in flight holds a call", gateState{checked: true, listsInFlight: true}, req("tools/call"), stepHold, 0},
		{"a listing in flight holds a notification", gateState{checked: true, listsInFlight: true}, note("notifications/roots/list_changed"), stepHold, 0},
		{"a listing in flight lets a ping pass", gateState{checked: true, listsInFlight: true}, req("ping"), stepForward, 0},
		{"an unapproved call: listed again first", open, withRefusal(req("tools/call"), unapproved, false), stepRelist, 0},
		{"an unapproved call after the re-listing: refused", open, withRefusal(req("tools/call"), unapproved, true), stepAnswer, codeInvalidParams},
		{"a name that does not read strictly: refused at once", open, withRefusal(req("tools/call"), unreadableName, false), stepAnswer, codeInvalidParams},
		{"capabilities that cannot be narrowed: refused", gateState{}, gateMsg{kind: mcpwire.KindRequest, method: "initialize", capsUnreadable: true}, stepAnswer, codeInvalidParams},
		{"hide answers resources/list", open, gateMsg{kind: mcpwire.KindRequest, method: "resources/list", emptyResources: true}, stepEmptyResources, 0},
		{"a batch is refused", open, gateMsg{batch: true, unreadable: mcpwire.ErrBatch}, stepAnswer, -32600},
		{"an unreadable message is dropped", open, gateMsg{unreadable: errors.New("bad")}, stepDrop, 0},
		{"a blank line goes on", open, gateMsg{blank: true}, stepForward, 0},
		{"an approved call goes on", open, req("tools/call"), stepForward, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := gate(tc.s, tc.m)
			if d.step != tc.want || d.code != tc.code {
				t.Errorf("gate = step %d code %d, want step %d code %d", d.step, d.code, tc.want, tc.code)
			}
		})
	}
}
