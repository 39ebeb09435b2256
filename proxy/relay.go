package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/rawio"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// inbound is one line read from a peer, parsed.
type inbound struct {
	line  []byte   // exact bytes, line end included
	env   envelope // valid when perr is nil
	perr  error    // why the line is not a JSON-RPC message
	blank bool     // only white space
}

// pendingReq is a client request forwarded to the server and not yet
// answered.
type pendingReq struct {
	id     []byte
	method string
	meta   []byte // server/discover: the request's _meta
	kind   digest.Kind
	cursor *string // list requests: the cursor asked for
}

// chain accumulates the pages of one listing the client reads, so that the
// definitions it ends up with are checked as a set.
type chain struct {
	items   []json.RawMessage
	started bool // began with a page asked for without a cursor
	pages   int
}

// maxChains bounds the listings of one kind awaiting their next page.
const maxChains = 64

// task is a check that runs while the relay holds traffic: the proxy's own
// listing at start-up or after list_changed, or the check of a list result
// the client is about to receive.
type task struct {
	what    string
	subject *inbound // the held server message forwarded when the check passes
	subjID  []byte   // the client request subject answers, if any

	// start-up and re-listing
	startup  bool   // the start-up check: the session opens when it passes
	hello    *hello // from the held handshake answer; nil: discover first
	discover []byte // modern session without server/discover: the client's _meta
	relist   bool

	// list result and instructions checks
	snap   *digest.Snapshot // the snapshot to judge
	page   *pageCheck       // to rebuild snap after an update
	helloR *hello           // the session's hello, to list again
}

// pageCheck is what a list-result check needs to be rebuilt against a newly
// approved snapshot.
type pageCheck struct {
	kind     digest.Kind
	items    []json.RawMessage
	complete bool
}

// taskResult is what a check found.
type taskResult struct {
	t        *task
	decision *Decision
	approved *digest.Snapshot // the snapshot now approved, when allowed
	hello    *hello           // the hello the start-up check used
	err      error
}

// relay is one proxied session. Each peer's reader handles its messages
// on its own goroutine under mu, as does a check's goroutine with its
// result; run only waits for the end.
type relay struct {
	o        *Options
	c        *child
	clientIn io.Reader
	toClient *outQueue
	toServer *outQueue

	prefix    string // of the proxy's own request ids: "mcpsign-" and 16 random hex digits and "-"
	ownSeq    atomic.Int64
	ownMu     sync.Mutex
	own       map[string]chan ownReply
	ownClosed error

	// wake tells run that the session may have ended.
	wake chan struct{}

	// mu guards the session state below. The readers and the check
	// goroutines take it to handle a message or a result; writes happen
	// after it is released (see outQueue).
	mu              sync.Mutex
	checked         bool  // the start-up check passed
	handshaking     bool  // an initialize or server/discover is in flight
	running         *task // the check in progress: traffic is held meanwhile
	blocked         *BlockedError
	heldClient      []*inbound
	heldServer      []*inbound
	heldBytes       int
	pending         map[string]*pendingReq
	chains          map[digest.Kind]map[string]*chain
	session         *hello
	approved        *approvedSet
	stopped         chan struct{} // closed when the server was stopped after a block
	dropInitialized bool          // the proxy sent notifications/initialized: drop the client's
	blockMsg        string        // the error message of answers after a block
	blockData       any           // and its data
	clientEOF       bool
	serverEOF       bool
	serverErr       error // why the server's stdout ended
	overflow        bool  // a peer stopped reading and its queue is full
}

func newRelay(o *Options, c *child, in io.Reader, out io.Writer) *relay {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return &relay{
		o: o,
		c: c,
		// Pipes in the poller are read and written by raw system calls
		// (internal/rawio): a relay is idle between messages, and going
		// through the runtime's system call path would wake its monitor
		// thread on every message.
		clientIn: rawio.Reader(in),
		toClient: newOutQueue(rawio.Writer(out), o.MaxHeldBytes),
		toServer: newOutQueue(rawio.Writer(c.stdin), o.MaxHeldBytes),
		prefix:   "mcpsign-" + hex.EncodeToString(rnd[:]) + "-",
		own:      map[string]chan ownReply{},
		wake:     make(chan struct{}, 1),
		pending:  map[string]*pendingReq{},
		chains:   map[digest.Kind]map[string]*chain{},
	}
}

// read reads one peer's lines and handles each under the lock, on this
// goroutine, then writes what the handling queued.
func (r *relay) read(src io.Reader, server bool) {
	lr := newLineReader(src, r.o.MaxMessageBytes)
	for {
		line, err := lr.next()
		if err != nil {
			r.mu.Lock()
			if server {
				r.serverEOF, r.serverErr = true, err
				r.closeOwn(serverGone(err))
				if r.blocked == nil && r.running == nil && !errors.Is(err, io.EOF) {
					// An oversized or unreadable message: what it said cannot
					// be checked, so nothing more of the session is trusted.
					r.block(&BlockedError{What: "a message from the server", Err: err})
				}
			} else {
				r.clientEOF = true
			}
			r.mu.Unlock()
			r.flush()
			r.signal()
			return
		}
		m := &inbound{line: line}
		body := content(line)
		if len(bytes.TrimSpace(body)) == 0 {
			m.blank = true
		} else {
			m.env, m.perr = parseEnvelope(body)
		}
		if server && m.perr == nil && !m.blank && r.deliverOwn(&m.env) {
			continue
		}
		r.mu.Lock()
		if server {
			r.fromServer(m)
		} else {
			r.fromClient(m)
		}
		r.mu.Unlock()
		r.flush()
	}
}

// flush writes what is queued for both peers.
func (r *relay) flush() {
	r.toServer.flush()
	r.toClient.flush()
}

// signal wakes run to look at the session's state.
func (r *relay) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *relay) run(ctx context.Context) error {
	go r.read(r.clientIn, false)
	go r.read(rawio.Reader(r.c.stdout), true)
	defer r.toClient.wait(r.o.ShutdownGrace)
	var endTimer <-chan time.Time // after the client left: how long the server gets to finish
	closing := false
	for {
		select {
		case <-r.wake:
		case <-endTimer:
			return r.finish()
		case <-ctx.Done():
			r.c.stop(r.o.ShutdownGrace)
			return context.Cause(ctx)
		}
		r.mu.Lock()
		blocked, clientEOF, serverEOF, running := r.blocked, r.clientEOF, r.serverEOF, r.running != nil
		overflow := r.overflow
		r.mu.Unlock()
		switch {
		case blocked != nil && clientEOF:
			<-r.stopped
			return blocked
		case blocked != nil:
			continue // answering every request until the client leaves
		case overflow:
			r.c.stop(r.o.ShutdownGrace)
			return fmt.Errorf("a peer stopped reading: more than %d bytes are queued for it", r.o.MaxHeldBytes)
		case r.toClient.failed() != nil:
			// The client stopped reading: the session is over.
			r.c.stop(r.o.ShutdownGrace)
			return nil
		case serverEOF && !running:
			return r.finish()
		case clientEOF && !closing:
			// The client is gone: ask the server to exit once what the
			// client sent is written, and let it finish for a while.
			closing = true
			go r.toServer.closeWhenDrained(r.c.closeStdin)
			endTimer = time.After(r.o.ShutdownGrace)
		}
	}
}

// serverGone is the error of the proxy's own calls once the server closed
// its stdout.
func serverGone(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the server closed its stdout")
	}
	return fmt.Errorf("reading from the server: %w", err)
}

// finish ends a session that was not blocked: the server is stopped (it has
// usually exited already), and its failure reported if it failed on its own
// while the client was still there.
func (r *relay) finish() error {
	clientLeft := r.clientEOF
	r.c.waitExit(r.o.ShutdownGrace)
	cleanly := r.c.exitedCleanly()
	status := r.c.status()
	r.c.stop(r.o.ShutdownGrace)
	if !clientLeft && !cleanly {
		return &ServerExitError{Status: status}
	}
	return nil
}

// gateClosed reports whether traffic is held.
func (r *relay) gateClosed() bool { return r.running != nil }

func (r *relay) hold(list *[]*inbound, m *inbound) {
	r.heldBytes += len(m.line)
	*list = append(*list, m)
	if r.heldBytes > r.o.MaxHeldBytes {
		r.block(&BlockedError{What: "held traffic", Err: fmt.Errorf("more than %d bytes held while the definitions were checked", r.o.MaxHeldBytes)})
	}
}

// fromClient handles one message from the client.
func (r *relay) fromClient(m *inbound) {
	if r.blocked != nil {
		if m.perr == nil && m.env.kind == kindRequest {
			r.answerBlocked(m.env.id)
		}
		return
	}
	if r.gateClosed() && m.perr == nil && !m.blank && m.env.kind == kindResponse {
		// An answer to a request of the server's the client has seen: it
		// changes nothing the check is about, and the server may be waiting
		// for it.
		r.sendServer(m.line)
		return
	}
	if r.gateClosed() || (len(r.heldClient) > 0 && !r.passesEarly(m)) || !r.clientMessage(m) {
		r.hold(&r.heldClient, m)
	}
}

// passesEarly reports whether a client message may overtake held ones before
// the start-up check: the handshake, pings and cancellations, which the
// held messages wait for.
func (r *relay) passesEarly(m *inbound) bool {
	if r.checked || m.perr != nil || m.blank {
		return false
	}
	switch m.env.kind {
	case kindRequest:
		return m.env.method == methodInitialize || m.env.method == methodDiscover || m.env.method == methodPing
	case kindNotification:
		return m.env.method == "notifications/cancelled"
	}
	return false
}

// clientMessage forwards one client message, or holds it until the
// start-up check has passed. It reports whether the message was consumed
// (false: it stays held and the draining stops).
func (r *relay) clientMessage(m *inbound) bool {
	if errors.Is(m.perr, errBatch) {
		// MCP has no batches since 2025-06-18; relaying one would bring back
		// a batch of answers the proxy would have to take apart to check.
		r.answer([]byte("null"), -32600, "mcpsign proxy: JSON-RPC batches are not supported", nil)
		return true
	}
	if m.blank || m.perr != nil {
		// Not a message the proxy can read: the server will refuse it. It
		// cannot be a request the proxy must track, so it is relayed as is,
		// once the start-up check has passed.
		if !r.checked && !m.blank {
			return false
		}
		r.sendServer(m.line)
		return true
	}
	env := &m.env
	switch env.kind {
	case kindRequest:
		handshake := env.method == methodInitialize || env.method == methodDiscover
		if !r.checked && !handshake && env.method != methodPing {
			if !r.handshaking {
				// The 2026-07-28 generation needs no handshake: the first
				// request starts the check, with its _meta.
				r.startTask(&task{what: "start-up listing", startup: true, discover: metaOf(env.params)})
			}
			return false
		}
		if len(r.pending) >= MaxInFlight {
			r.answer(env.id, -32603, "mcpsign proxy: too many requests in flight", nil)
			return true
		}
		p := &pendingReq{id: env.id, method: env.method}
		switch {
		case handshake:
			r.handshaking = true
			if env.method == methodDiscover {
				p.meta = metaOf(env.params)
			}
		default:
			for _, k := range digest.Kinds {
				if env.method == k.ListMethod() {
					p.kind = k
					p.cursor = cursorOf(env.params)
				}
			}
		}
		r.pending[env.idKey] = p
	case kindNotification:
		if !r.checked && env.method != "notifications/cancelled" {
			return false // held until the start-up check has passed
		}
		if env.method == methodInitialized && r.dropInitialized {
			r.dropInitialized = false // the proxy sent it already
			return true
		}
	}
	r.sendServer(m.line)
	return true
}

// fromServer handles one message from the server (never an answer to the
// proxy's own requests: those are routed by the reader).
func (r *relay) fromServer(m *inbound) {
	if r.blocked != nil {
		return
	}
	if r.gateClosed() && !(m.perr == nil && !m.blank && m.env.kind == kindRequest && m.env.method == methodPing && len(r.heldServer) == 0) {
		r.hold(&r.heldServer, m)
		return
	}
	r.serverMessage(m)
}

func (r *relay) serverMessage(m *inbound) {
	if m.blank {
		r.sendClient(m.line)
		return
	}
	if m.perr != nil {
		r.block(&BlockedError{What: "a message from the server", Err: m.perr})
		return
	}
	env := &m.env
	switch env.kind {
	case kindResponse:
		p := r.pending[env.idKey]
		delete(r.pending, env.idKey)
		if env.idKey == idNull {
			p = nil
		}
		var subjID []byte
		if p != nil {
			subjID = p.id
		}
		if p != nil && env.result != nil {
			switch p.method {
			case methodInitialize:
				r.handshaking = false
				h, err := helloFromInitialize(env.result)
				if err != nil {
					r.block(&BlockedError{What: "the initialize result", Err: err, subjectID: subjID})
					return
				}
				// Servers finish setting up on notifications/initialized
				// (some register tools that depend on the client's
				// capabilities then): the proxy sends it itself before it
				// lists, so that it sees what the client will, and drops
				// the client's own.
				r.sendServer([]byte(initializedLine))
				r.dropInitialized = true
				r.startTask(&task{what: "start-up listing", startup: true, subject: m, subjID: subjID, hello: h})
				return
			case methodDiscover:
				r.handshaking = false
				r.discovered(m, p)
				return
			}
		}
		if p != nil && (p.method == methodInitialize || p.method == methodDiscover) {
			r.handshaking = false // an error answer: the client tries again or falls back
		}
		if env.lists != 0 {
			r.listResult(m, p)
			return
		}
	case kindNotification:
		if isListChanged(env.method) {
			if !r.checked {
				r.sendClient(m.line)
				return
			}
			r.startTask(&task{what: "re-listing after " + env.method, subject: m, relist: true, helloR: r.session})
			return
		}
	}
	r.sendClient(m.line)
}

// discovered handles the server's answer to the client's server/discover.
func (r *relay) discovered(m *inbound, p *pendingReq) {
	h, modern, err := helloFromDiscover(m.env.result, p.meta)
	if err != nil {
		r.block(&BlockedError{What: "the server/discover result", Err: err, subjectID: p.id})
		return
	}
	if !modern {
		// The client falls back to initialize, which is checked.
		r.sendClient(m.line)
		return
	}
	if !r.checked {
		r.startTask(&task{what: "start-up listing", startup: true, subject: m, subjID: p.id, hello: h})
		return
	}
	// A later server/discover: its instructions reach the client.
	if equalInstructions(h.instructions, r.approved.snap.Instructions) {
		r.sendClient(m.line)
		return
	}
	snap := *r.approved.snap
	snap.Instructions = h.instructions
	r.startTask(&task{what: "server/discover result", subject: m, subjID: p.id, snap: &snap, helloR: r.session})
}

func equalInstructions(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func isListChanged(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}

// listResult checks a result that carries definitions before the client
// receives it.
func (r *relay) listResult(m *inbound, p *pendingReq) {
	var subjID []byte
	if p != nil {
		subjID = p.id
	}
	what := "a list result"
	if p != nil {
		what = p.method + " result"
	}
	if !r.checked {
		// Only the handshake and pings pass before the start-up check; a
		// definition list now answers something else.
		r.block(&BlockedError{What: what, Err: errors.New("the server sent definitions before the start-up check"), subjectID: subjID})
		return
	}
	for _, k := range digest.Kinds {
		if m.env.lists&listFlag(k) == 0 {
			continue
		}
		items, next, hasNext, err := digest.SplitList(k, m.env.result)
		if err != nil {
			r.block(&BlockedError{What: what, Err: err, subjectID: subjID})
			return
		}
		var ch *chain
		if p != nil && p.kind == k {
			if p.cursor == nil {
				ch = &chain{started: true}
			} else if c := r.chains[k][*p.cursor]; c != nil {
				ch = c
				delete(r.chains[k], *p.cursor)
			}
		}
		if ch == nil {
			ch = &chain{} // a page whose listing the proxy did not see begin
		}
		ch.items = append(ch.items, items...)
		ch.pages++
		if ch.pages > MaxPages {
			r.block(&BlockedError{What: what, Err: fmt.Errorf("a listing of more than %d pages", MaxPages), subjectID: subjID})
			return
		}
		complete := ch.started && !hasNext
		if hasNext {
			if r.chains[k] == nil {
				r.chains[k] = map[string]*chain{}
			}
			if len(r.chains[k]) >= maxChains {
				for c := range r.chains[k] {
					delete(r.chains[k], c)
					break
				}
			}
			r.chains[k][next] = ch
		}
		if r.approved.covers(k, ch.items, complete) {
			continue // the bytes the policy approved
		}
		pc := &pageCheck{kind: k, items: ch.items, complete: complete}
		r.startTask(&task{what: what, subject: m, subjID: subjID, snap: r.approved.with(pc), page: pc, helloR: r.session})
		return
	}
	r.sendClient(m.line)
}

func listFlag(k digest.Kind) listMembers {
	switch k {
	case digest.KindTool:
		return hasTools
	case digest.KindPrompt:
		return hasPrompts
	}
	return hasResourceTemplates
}

// metaOf returns the _meta of request params, or nil.
func metaOf(params []byte) []byte {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := members(params, "params")
	if err != nil {
		return nil
	}
	if v, ok := m["_meta"]; ok && len(v) > 0 && v[0] == '{' {
		return v
	}
	return nil
}

// cursorOf returns the cursor of list request params, or nil.
func cursorOf(params []byte) *string {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := members(params, "params")
	if err != nil {
		return nil
	}
	v, ok := m["cursor"]
	if !ok || string(v) == "null" {
		return nil
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return nil
	}
	return &s
}

// startTask holds traffic and runs t.
func (r *relay) startTask(t *task) {
	r.running = t
	ctx, cancel := context.WithTimeoutCause(context.Background(), r.o.CheckTimeout,
		fmt.Errorf("no complete answer within %s", r.o.CheckTimeout))
	go func() {
		defer cancel()
		res := r.runTask(ctx, t)
		res.t = t
		r.mu.Lock()
		r.taskDone(&res)
		r.mu.Unlock()
		r.flush()
		r.signal()
	}()
}

// runTask does the work of a check; it runs on its own goroutine and touches
// no loop state.
func (r *relay) runTask(ctx context.Context, t *task) taskResult {
	pol := r.o.Policy
	switch {
	case t.page != nil || t.snap != nil:
		d, err := pol.Check(ctx, t.snap)
		if err != nil {
			return taskResult{err: err}
		}
		if d.Allow {
			return taskResult{decision: d, approved: t.snap}
		}
		// Before refusing what the client is about to receive, list
		// everything again: the server may have changed as a whole under
		// a signed update the policy rolls forward to, or another proxy may
		// have approved it already.
		full, err := r.listAll(ctx, t.helloR)
		if err != nil {
			return taskResult{decision: d}
		}
		d2, err := pol.Check(ctx, full)
		if err != nil || !d2.Allow || !d2.Updated {
			return taskResult{decision: d}
		}
		a := newApprovedSet(full)
		var snap *digest.Snapshot
		if t.page != nil {
			snap = a.with(t.page)
		} else {
			s := *full
			s.Instructions = t.snap.Instructions
			snap = &s
		}
		d3, err := pol.Check(ctx, snap)
		if err != nil {
			return taskResult{err: err}
		}
		if d3.Allow {
			d3.Updated = true
			return taskResult{decision: d3, approved: full}
		}
		return taskResult{decision: d3}
	default:
		h := t.hello
		if h == nil && t.relist {
			h = t.helloR
		}
		if h == nil {
			// A modern session that began without server/discover: ask the
			// server itself, with the client's _meta.
			meta := t.discover
			res, err := r.call(ctx, methodDiscover, listParams{Meta: mustMeta(meta)})
			var modern bool
			if err == nil {
				h, modern, err = helloFromDiscover(res, meta)
			}
			if err != nil {
				return taskResult{err: fmt.Errorf("server/discover: %w", err)}
			}
			if !modern {
				return taskResult{err: errors.New("server/discover: the server offers no protocol version of the 2026-07-28 generation, and the client sent no initialize")}
			}
		}
		snap, err := r.listAll(ctx, h)
		if err != nil {
			return taskResult{err: err, hello: h}
		}
		d, err := pol.Check(ctx, snap)
		if err != nil {
			return taskResult{err: err, hello: h}
		}
		res := taskResult{decision: d, hello: h}
		if d.Allow {
			res.approved = snap
		}
		return res
	}
}

// mustMeta is the _meta of the proxy's own server/discover: the client's
// protocol version, info and capabilities, or the proxy's.
func mustMeta(clientMeta []byte) json.RawMessage {
	version := protocolModern
	if clientMeta != nil {
		if m, err := members(clientMeta, "_meta"); err == nil {
			if v, ok := m[metaProtocolVersion]; ok {
				if s, err := digest.DecodeString(v); err == nil && s >= protocolModern {
					version = s
				}
			}
		}
	}
	meta, _ := requestMeta(clientMeta, version)
	return meta
}

// taskDone applies the result of a check: the session goes on (the held
// message is forwarded, then everything held), or it is blocked.
func (r *relay) taskDone(res *taskResult) {
	t := res.t
	r.running = nil
	if r.blocked != nil {
		return
	}
	if res.err != nil {
		r.block(&BlockedError{What: t.what, Err: res.err, subjectID: t.subjID})
		return
	}
	d := res.decision
	if !d.Allow {
		r.block(&BlockedError{What: t.what, Decision: d, subjectID: t.subjID})
		return
	}
	if res.hello != nil {
		r.session = res.hello
	}
	if res.approved != nil && (r.approved == nil || d.Updated || t.startup || t.relist) {
		r.approved = newApprovedSet(res.approved)
	}
	if t.startup {
		r.checked = true
	}
	kind := EventChecked
	if d.Updated {
		kind = EventUpdated
	}
	r.o.OnEvent(Event{Kind: kind, Decision: d, What: t.what})
	if t.subject != nil {
		r.sendClient(t.subject.line)
	}
	r.drain()
}

// drain processes the held messages in order until a check starts again.
func (r *relay) drain() {
	for len(r.heldServer) > 0 && !r.gateClosed() && r.blocked == nil {
		m := r.heldServer[0]
		r.heldServer = r.heldServer[1:]
		r.heldBytes -= len(m.line)
		r.serverMessage(m)
	}
	for len(r.heldClient) > 0 && !r.gateClosed() && r.blocked == nil {
		m := r.heldClient[0]
		if !r.clientMessage(m) {
			return
		}
		r.heldClient = r.heldClient[1:]
		r.heldBytes -= len(m.line)
	}
	if len(r.heldServer) == 0 {
		r.heldServer = nil
	}
	if len(r.heldClient) == 0 {
		r.heldClient = nil
	}
}

// sendServer and sendClient queue a message (under the lock); the caller
// flushes once it released the lock.
func (r *relay) sendServer(line []byte) {
	if !r.toServer.enqueue(line) {
		r.overflow = true
		r.signal()
	}
}

func (r *relay) sendClient(line []byte) {
	if !r.toClient.enqueue(line) {
		r.overflow = true
		r.signal()
	}
}

// block stops the session: every held and in-flight request is answered
// with an error, the held server messages are dropped, the server is
// stopped and the report written.
func (r *relay) block(b *BlockedError) {
	if r.blocked != nil {
		return
	}
	r.blocked = b
	msg, data := UncheckedMessage, map[string]any{"reason": b.What}
	if b.Decision != nil {
		msg = BlockedMessage
		if len(b.Decision.Findings) > 0 {
			data["findings"] = b.Decision.Findings
		}
	}
	r.blockMsg, r.blockData = msg, data
	if b.subjectID != nil {
		r.answer(b.subjectID, BlockedCode, msg, data)
	}
	for _, p := range r.pending {
		r.answer(p.id, BlockedCode, msg, data)
	}
	r.pending = nil
	for _, m := range r.heldClient {
		if m.perr == nil && !m.blank && m.env.kind == kindRequest {
			r.answer(m.env.id, BlockedCode, msg, data)
		}
	}
	r.heldClient, r.heldServer, r.heldBytes = nil, nil, 0
	r.toServer.drop() // not even what was decided a moment ago goes out
	r.stopped = make(chan struct{})
	go func() {
		r.c.stop(r.o.ShutdownGrace)
		close(r.stopped)
		r.signal()
	}()
	r.report(b)
	r.o.OnEvent(Event{Kind: EventBlocked, Decision: b.Decision, Err: b.Err, What: b.What})
}

// report writes why the session was blocked, escaped.
func (r *relay) report(b *BlockedError) {
	var sb strings.Builder
	if b.Decision != nil {
		sb.WriteString("mcpsign proxy: BLOCKED: the server's definitions changed (" + safeLine(b.What) + ")")
		if b.Decision.Summary != "" {
			sb.WriteString(": " + safeLine(b.Decision.Summary))
		}
		sb.WriteString("\n")
		sb.WriteString(indent(safeText(b.Decision.Report), "  "))
	} else {
		sb.WriteString("mcpsign proxy: BLOCKED: " + safeLine(b.What) + " could not be checked: " + safeText(b.Err.Error()) + "\n")
	}
	sb.WriteString("mcpsign proxy: the server was stopped; every request is answered with error " + fmt.Sprint(BlockedCode) + " until the client disconnects\n")
	io.WriteString(r.o.Stderr, sb.String())
}

// safeText makes text from a policy or an error safe for a terminal: every
// control (but newline and tab), bidirectional and invisible character is
// escaped as internal/textsafe does. Backslashes are left as they are, so
// that text a policy escaped already is not escaped twice; what matters
// here is that nothing hidden or reordering gets through.
func safeText(s string) string {
	return strings.ReplaceAll(textsafe.EscapeKeepLayout(s), `\\`, `\`)
}

// safeLine is safeText for text that must stay on one line.
func safeLine(s string) string {
	return strings.ReplaceAll(textsafe.Escape(s), `\\`, `\`)
}

// answerBlocked answers a request that arrived after the block.
func (r *relay) answerBlocked(id []byte) {
	r.answer(id, BlockedCode, r.blockMsg, r.blockData)
}

// answer writes an error response to the client.
func (r *relay) answer(id []byte, code int, msg string, data any) {
	e := struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{code, msg, data}
	eb, err := json.Marshal(e)
	if err != nil {
		eb = []byte(`{"code":-32603,"message":"mcpsign proxy: internal error"}`)
	}
	line := make([]byte, 0, 48+len(id)+len(eb))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, `,"error":`...)
	line = append(line, eb...)
	line = append(line, "}\n"...)
	r.sendClient(line)
}
