package proxy

import (
	"errors"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// The gate of the client's messages (docs/PROXY.md, "Order: exactly one
// answer per request"): which answer a message gets, or whether it is
// forwarded or held, is decided here, by one pure function of the
// session's state and the message (gate), and nowhere else. The relay
// gathers the inputs (gateStateOf, gateMsgOf) and applies the step
// (clientMessage); the pending requests, paging and I/O stay there.

// step is what the gate decides for one client message.
type step int

const (
	// stepForward: to the server (a request is tracked first).
	stepForward step = iota + 1
	// stepHold: held, in order, until the gate opens again.
	stepHold
	// stepAnswer: answered by the proxy with decision.code and .msg, not
	// forwarded.
	stepAnswer
	// stepAnswerBlocked: answered with the block's error.
	stepAnswerBlocked
	// stepDrop: neither forwarded nor answered (decision.msg says why on
	// stderr, when set).
	stepDrop
	// stepDropInitialized: the client's notifications/initialized, which
	// the proxy sent already.
	stepDropInitialized
	// stepStartUp: held; the start-up check starts with this request's
	// _meta (a 2026-07-28 session without a handshake).
	stepStartUp
	// stepRelist: held; the server is listed again before the request is
	// decided anew (it names what the approved set lacks).
	stepRelist
	// stepEmptyResources: answered with an empty resources/list (hide).
	stepEmptyResources
)

// gateState is what the gate reads of the session.
type gateState struct {
	blocked      bool // the session is blocked
	checkRunning bool // a check holds all traffic
	// heldBefore: client messages are held already, and this one arrives
	// behind them (false for the held message the drain retries).
	heldBefore      bool
	checked         bool // the start-up check passed
	handshaking     bool // an initialize or server/discover is in flight
	listsInFlight   bool // a listing the client will see is unanswered
	dropInitialized bool // the proxy sent notifications/initialized itself
}

// gateMsg is a client message as the gate sees it.
type gateMsg struct {
	blank      bool // only white space
	batch      bool // a JSON-RPC batch
	unreadable error
	kind       mcpwire.Kind
	method     string
	// capsUnreadable: its capabilities must be narrowed and cannot be
	// read strictly (narrowCapabilities).
	capsUnreadable bool
	// emptyResources: a resources/list the hide mode answers itself.
	emptyResources bool
	// refusal: what refusal found for a request naming a definition.
	refusal  *refused
	relisted bool // the server was listed again for it already
}

// decision is the gate's verdict.
type decision struct {
	step step
	code int
	msg  string
}

// gate decides one client message: a pure function, table-tested apart
// from I/O (TestGate).
func gate(s gateState, m gateMsg) decision {
	isReq := m.unreadable == nil && !m.blank && m.kind == mcpwire.KindRequest
	switch {
	case s.blocked:
		// Once blocked, every request gets the block's answer, whenever
		// it arrives; nothing else goes anywhere.
		if isReq {
			return decision{step: stepAnswerBlocked}
		}
		return decision{step: stepDrop}
	case m.unreadable == nil && !m.blank && m.kind == mcpwire.KindResponse:
		// An answer to a request of the server's the client has seen: it
		// changes nothing a check is about, and the server may be waiting
		// for it before it answers what holds the client's messages.
		return decision{step: stepForward}
	case s.checkRunning:
		return decision{step: stepHold}
	case s.heldBefore && !passesEarly(s, m):
		return decision{step: stepHold}
	case m.batch:
		// MCP has no batches since 2025-06-18; relaying one would bring back
		// a batch of answers the proxy would have to take apart to check.
		return decision{step: stepAnswer, code: codeInvalidRequest, msg: "mcpsign proxy: JSON-RPC batches are not supported"}
	case m.blank:
		return decision{step: stepForward}
	case m.unreadable != nil:
		// Not a message the proxy can read strictly: it is not relayed,
		// since the server could read it as a request the proxy does not
		// track, and its answer would answer nothing pending.
		return decision{step: stepDrop, msg: "dropped a message from the client that is not strict JSON-RPC: " + m.unreadable.Error()}
	case isReq:
		return gateRequest(s, m)
	}
	// A notification.
	switch {
	case m.method == mcpwire.MethodCancelled:
		// (The relay handles a cancellation before the gate unless the
		// session is blocked: cancel.go.)
		return decision{step: stepForward}
	case s.listsInFlight, !s.checked:
		// In order behind the requests held, or until the start-up check
		// has passed.
		return decision{step: stepHold}
	case m.method == mcpwire.MethodInitialized && s.dropInitialized:
		return decision{step: stepDropInitialized}
	}
	return decision{step: stepForward}
}

// gateRequest decides a readable client request once nothing holds it
// for the session's sake.
func gateRequest(s gateState, m gateMsg) decision {
	if m.capsUnreadable {
		return decision{step: stepAnswer, code: codeInvalidParams, msg: "mcpsign proxy: " + m.method + ": " + errStripCapabilities.Error() + ", and the policy removes some of them"}
	}
	handshake := m.method == mcpwire.MethodInitialize || m.method == mcpwire.MethodDiscover
	if !s.checked && !handshake && m.method != mcpwire.MethodPing {
		if !s.handshaking {
			// The 2026-07-28 generation needs no handshake: the first
			// request starts the check, with its _meta.
			return decision{step: stepStartUp}
		}
		return decision{step: stepHold}
	}
	if s.listsInFlight && m.method != mcpwire.MethodPing {
		// A listing the client will see is unanswered: what the server
		// says in it is checked before anything else reaches the server.
		return decision{step: stepHold}
	}
	if m.emptyResources {
		return decision{step: stepEmptyResources}
	}
	if ref := m.refusal; ref != nil {
		if ref.relist && !m.relisted {
			// The request names what the approved set does not hold: the
			// server may have changed under the proxy (a rewritten lock, a
			// list_changed still on its way). It is listed again first, so
			// that the answer is the one rule's: held while the check runs,
			// the block's answer if it blocks, and the refusal (or the
			// server's answer, if an update approved the name) only once
			// the server was found to match.
			return decision{step: stepRelist}
		}
		return decision{step: stepAnswer, code: ref.code, msg: ref.msg}
	}
	return decision{step: stepForward}
}

// passesEarly reports whether a client message may overtake held ones
// before the start-up check: the handshake, pings and cancellations, which
// the held messages wait for.
func passesEarly(s gateState, m gateMsg) bool {
	if s.checked || m.unreadable != nil || m.blank {
		return false
	}
	switch m.kind {
	case mcpwire.KindRequest:
		return m.method == mcpwire.MethodInitialize || m.method == mcpwire.MethodDiscover || m.method == mcpwire.MethodPing
	case mcpwire.KindNotification:
		return m.method == mcpwire.MethodCancelled
	}
	return false
}

// gateStateOf is the session's state as the gate reads it (mu held).
// arriving: the message was just read (not the held one the drain retries).
func (r *relay) gateStateOf(arriving bool) gateState {
	return gateState{
		blocked:         r.blocked != nil,
		checkRunning:    r.gateClosed(),
		heldBefore:      arriving && len(r.heldClient) > 0,
		checked:         r.checked,
		handshaking:     r.handshaking,
		listsInFlight:   r.listsInFlight > 0,
		dropInitialized: r.dropInitialized,
	}
}

// gateMsgOf is a client message as the gate sees it (mu held). It narrows
// a request's capabilities first (narrowCapabilities), so that what is
// judged is what the server would get.
func (r *relay) gateMsgOf(m *inbound, s gateState) gateMsg {
	g := gateMsg{blank: m.blank, relisted: m.relisted}
	switch {
	case errors.Is(m.perr, mcpwire.ErrBatch):
		g.batch = true
		return g
	case m.perr != nil:
		g.unreadable = m.perr
		return g
	case m.blank:
		return g
	}
	g.kind, g.method = m.env.Kind, m.env.Method
	if g.kind != mcpwire.KindRequest || s.blocked {
		return g
	}
	if !r.narrowCapabilities(m) {
		g.capsUnreadable = true
		return g
	}
	g.emptyResources = r.answersResourceList(&m.env)
	g.refusal = r.refusal(&m.env)
	return g
}

// answersResourceList reports whether the hide mode answers a
// resources/list itself (docs/PROXY.md, "Static resources").
func (r *relay) answersResourceList(env *mcpwire.Message) bool {
	if r.o.Resources != ResourcesHide || r.approved == nil || env.Method != digest.KindResource.ListMethod() {
		return false
	}
	_, inFlight := r.pending.Get(env.ID)
	return !inFlight // else refused on the normal way: one answer per id
}

// fromClient handles one message from the client as it arrives: a
// cancellation at once (cancel), everything else by the gate (gate.go).
func (r *relay) fromClient(m *inbound) {
	if r.blocked == nil && m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindNotification && m.env.Method == mcpwire.MethodCancelled {
		r.cancel(m)
		return
	}
	if !r.clientMessage(m, true) {
		r.hold(&r.heldClient, m)
	}
}

// clientMessage applies the gate's decision on one client message
// (arriving: just read; else the held one the drain retries). It reports
// whether the message was consumed (false: it is held, and the drain
// stops).
func (r *relay) clientMessage(m *inbound, arriving bool) bool {
	s := r.gateStateOf(arriving)
	g := r.gateMsgOf(m, s)
	d := gate(s, g)
	env := &m.env
	switch d.step {
	case stepHold:
		return false
	case stepAnswerBlocked:
		r.answerBlocked(env.ID)
	case stepAnswer:
		id := env.ID
		if m.perr != nil {
			id = []byte("null") // a batch: no id to answer
		}
		r.answer(id, d.code, d.msg, nil)
	case stepDrop:
		if d.msg != "" {
			r.notice(d.msg)
		}
	case stepDropInitialized:
		r.dropInitialized = false
	case stepStartUp:
		meta := mcpwire.MetaOf(env.Params)
		r.clientCaps = readClientCaps(metaCapabilities(meta))
		r.startTask(&task{what: "start-up listing", startup: true, discover: meta})
		return false
	case stepRelist:
		m.relisted = true
		subject := env.Method
		if g.refusal != nil { // what the gate decided on, not computed again
			subject += " of " + g.refusal.subject
		}
		r.startTask(&task{what: "re-listing before " + subject, relist: true, helloR: r.session})
		return false
	case stepEmptyResources:
		r.respond(env.ID, "result", []byte(emptyResources))
	case stepForward:
		if m.perr == nil && !m.blank && env.Kind == mcpwire.KindRequest && !r.track(env) {
			return true // answered by track
		}
		r.sendServer(m.line)
	}
	return true
}

// track records a request the gate forwards as pending (the handshake's
// timer and capabilities, a listing that holds what follows it); it
// reports false when it answered the request instead (too many in flight,
// an id already in flight).
func (r *relay) track(env *mcpwire.Message) bool {
	if r.pending.Len() >= MaxInFlight {
		r.answer(env.ID, codeInternalError, "mcpsign proxy: too many requests in flight", nil)
		return false
	}
	p := &pendingReq{id: env.ID, method: env.Method}
	switch env.Method {
	case mcpwire.MethodInitialize, mcpwire.MethodDiscover:
		r.handshaking = true
		r.awaitHandshake(env.Method)
		if env.Method == mcpwire.MethodDiscover {
			p.meta = mcpwire.MetaOf(env.Params)
			r.clientCaps = readClientCaps(metaCapabilities(p.meta))
		} else {
			r.clientCaps = readClientCaps(initializeCapabilities(env.Params))
		}
	default:
		for _, k := range r.checkedKinds() {
			if env.Method == k.ListMethod() {
				p.kind = k
				p.cursor = cursorOf(env.Params)
				p.gating = true
			}
		}
	}
	if r.cancelled.has(env.ID) {
		// Its late answer could be taken for this request's (cancel).
		r.answer(env.ID, codeInvalidRequest, "mcpsign proxy: a request with this id was cancelled and the server may still answer it: use another id", nil)
		return false
	}
	if err := r.pending.Add(env.ID, p); err != nil {
		r.answer(env.ID, codeInvalidRequest, "mcpsign proxy: a request with this id is already in flight", nil)
		return false
	}
	if p.gating {
		r.listsInFlight++
	}
	return true
}
