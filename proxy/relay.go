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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/rawio"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/mcpwire"
	"github.com/mcpsign/mcpsign/mcpwire/proctree"
)

// inbound is one line read from a peer, parsed.
type inbound struct {
	line  []byte          // exact bytes, line end included
	env   mcpwire.Message // valid when perr is nil
	perr  error           // why the line is not a JSON-RPC message
	blank bool            // only white space
}

// pendingReq is a client request forwarded to the server and not yet
// answered.
type pendingReq struct {
	id     []byte
	method string
	meta   []byte // server/discover: the request's _meta
	kind   digest.Kind
	cursor *string // list requests: the cursor asked for
	// gating: a list request whose answer the client will see: later client
	// requests wait until that answer was checked (docs/PROXY.md, "Order").
	gating bool
}

// chain accumulates the pages of one listing the client reads, so that the
// definitions it ends up with are checked as a set.
type chain struct {
	bytes   int // of the pages' lines (the items point into them) and the cursor
	items   []json.RawMessage
	started bool // began with a page asked for without a cursor
	pages   int
	// cursors are the cursors this listing was asked for or handed: one
	// handed again is a loop (the proxy's own listing refuses it too).
	cursors map[string]bool
}

// dropChain forgets the listing of kind k awaiting the page of cursor.
func (r *relay) dropChain(k digest.Kind, cursor string) {
	if c := r.chains[k][cursor]; c != nil {
		r.chainBytes -= c.bytes
		delete(r.chains[k], cursor)
	}
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
	startup  bool           // the start-up check: the session opens when it passes
	hello    *mcpwire.Hello // from the held handshake answer; nil: discover first
	discover []byte         // modern session without server/discover: the client's _meta
	relist   bool

	// list result and instructions checks
	snap   *digest.Snapshot // the snapshot to judge
	page   *pageCheck       // to rebuild snap after an update
	helloR *mcpwire.Hello   // the session's hello, to list again

	// clientCaps are the client capabilities the client announced, which
	// the proxy's own listings record (set by startTask).
	clientCaps json.RawMessage
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
	hello    *mcpwire.Hello   // the hello the start-up check used
	err      error
}

// relay is one proxied session. Each peer's reader handles its messages
// on its own goroutine under mu, as does a check's goroutine with its
// result; run only waits for the end.
type relay struct {
	o        *Options
	c        upstream // the server: a child process or an HTTP endpoint
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
	checked         bool        // the start-up check passed
	handshaking     bool        // an initialize or server/discover is in flight
	handshakeTimer  *time.Timer // blocks when the handshake is unanswered for CheckTimeout
	handshakeGen    int         // of the handshake the timer is for
	running         *task       // the check in progress: traffic is held meanwhile
	blocked         *BlockedError
	heldClient      []*inbound
	heldServer      []*inbound
	heldBytes       int
	pending         mcpwire.Pending[*pendingReq]
	listsInFlight   int  // client list requests forwarded and not yet answered
	draining        bool // drain is running: a nested call leaves the work to it
	chains          map[digest.Kind]map[string]*chain
	chainBytes      int // what the chains keep, counted against MaxHeldBytes
	session         *mcpwire.Hello
	approved        *approvedSet
	stopped         chan struct{} // closed when the server was stopped after a block
	dropInitialized bool          // the proxy sent notifications/initialized: drop the client's
	blockMsg        string        // the error message of answers after a block
	blockData       any           // and its data
	clientEOF       bool
	serverEOF       bool
	serverErr       error // why the server's stdout ended
	overflow        bool  // a peer stopped reading and its queue is full
	// clientCaps are the client capabilities of the client's handshake (or
	// first 2026-07-28 request), RFC 8785 form; nil when they cannot be
	// read (the check then takes them as unknown: removal stays drift).
	clientCaps json.RawMessage
}

func newRelay(o *Options, c upstream, in io.Reader, out io.Writer) *relay {
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
		toServer: newOutQueue(c.input(), o.MaxHeldBytes),
		prefix:   "mcpsign-" + hex.EncodeToString(rnd[:]) + "-",
		own:      map[string]chan ownReply{},
		wake:     make(chan struct{}, 1),
		chains:   map[digest.Kind]map[string]*chain{},
	}
}

// read reads one peer's lines (next returns them one at a time) and
// handles each under the lock, on this goroutine, then writes what the
// handling queued.
func (r *relay) read(next func() ([]byte, error), server bool) {
	for {
		line, err := next()
		if err != nil {
			r.mu.Lock()
			if server {
				r.serverEOF, r.serverErr = true, err
				r.closeOwn(serverGone(err))
				var ce *ConnectError
				// A protocol violation (a remote server's stream, say) blocks
				// at once, even while a check runs: the check would only
				// see the server gone.
				violation := errors.Is(err, mcpwire.ErrProtocol) || errors.Is(err, mcpwire.ErrMessageTooLarge)
				if r.blocked == nil && (r.running == nil || violation) && !errors.Is(err, io.EOF) && !errors.As(err, &ce) {
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
		body := mcpwire.Content(line)
		if len(bytes.TrimSpace(body)) == 0 {
			m.blank = true
		} else {
			if server {
				m.env, m.perr = mcpwire.ParseFromServer(body)
				if m.perr == nil {
					m.perr = mcpwire.CheckFraming(line)
				}
			} else {
				m.env, m.perr = mcpwire.Parse(body)
			}
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
	go r.read(mcpwire.NewLineReader(r.clientIn, r.o.MaxMessageBytes).Next, false)
	go r.read(r.c.next, true)
	defer r.toClient.wait(r.o.ShutdownGrace)
	defer func() {
		r.mu.Lock()
		if r.handshakeTimer != nil {
			r.handshakeTimer.Stop()
		}
		r.handshakeGen++ // a callback already waiting for mu does nothing
		r.mu.Unlock()
	}()
	var endTimer <-chan time.Time // after the client left: how long the server gets to finish
	closing := false
	for {
		select {
		case <-r.wake:
		case <-endTimer:
			return r.finish()
		case <-ctx.Done():
			r.interrupted(context.Cause(ctx))
			r.c.stop(min(r.o.ShutdownGrace, proctree.PromptGrace))
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
			go r.toServer.closeWhenDrained(r.c.closeInput)
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
	r.mu.Lock()
	clientLeft := r.clientEOF // the client's reader may still be running
	serverErr := r.serverErr
	r.mu.Unlock()
	r.c.waitExit(r.o.ShutdownGrace)
	cleanly := r.c.exitedCleanly()
	status := r.c.status()
	r.c.stop(r.o.ShutdownGrace)
	if ce := (*ConnectError)(nil); errors.As(serverErr, &ce) {
		return ce // a remote server that could not be used: said in one line
	}
	if !clientLeft && !cleanly {
		return &ServerExitError{Status: status}
	}
	return nil
}

// awaitHandshake bounds the wait for the server's answer to the client's
// method (initialize or server/discover) by CheckTimeout: a server that
// never answers blocks the session (the client gets BlockedCode, the report
// says what was awaited), so that the proxy is never silent. Called with mu
// held.
func (r *relay) awaitHandshake(method string) {
	if r.handshakeTimer != nil {
		r.handshakeTimer.Stop()
	}
	r.handshakeGen++
	gen := r.handshakeGen
	r.handshakeTimer = time.AfterFunc(r.o.CheckTimeout, func() {
		r.mu.Lock()
		if gen == r.handshakeGen && r.handshaking && r.blocked == nil {
			r.block(&BlockedError{What: "the server's answer to " + method, Err: fmt.Errorf("no answer within %s", r.o.CheckTimeout)})
		}
		r.mu.Unlock()
		r.flush()
		r.signal()
	})
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
		if m.perr == nil && m.env.Kind == mcpwire.KindRequest {
			r.answerBlocked(m.env.ID)
		}
		return
	}
	if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindResponse && (r.gateClosed() || len(r.heldClient) > 0) {
		// An answer to a request of the server's the client has seen: it
		// changes nothing the check is about, and the server may be waiting
		// for it before it answers what holds the client's messages.
		r.sendServer(m.line)
		return
	}
	if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindNotification && m.env.Method == mcpwire.MethodCancelled && r.cancel(m) {
		return
	}
	if r.gateClosed() || (len(r.heldClient) > 0 && !r.passesEarly(m)) || !r.clientMessage(m) {
		r.hold(&r.heldClient, m)
	}
}

// cancel handles the client's notifications/cancelled at once, whatever is
// held: a request cancelled while held is dropped (the client expects no
// answer to it), and a list request cancelled in flight no longer holds
// later requests, since the server may never answer it. It reports whether
// the notification was consumed; otherwise it goes the normal way.
func (r *relay) cancel(m *inbound) bool {
	id := cancelledID(m.env.Params)
	if id == nil {
		return false
	}
	for i, h := range r.heldClient {
		if h.perr == nil && !h.blank && h.env.Kind == mcpwire.KindRequest && bytes.Equal(h.env.ID, id) {
			r.heldClient = append(r.heldClient[:i:i], r.heldClient[i+1:]...)
			r.heldBytes -= len(h.line)
			return true
		}
	}
	if p, ok := r.pending.Get(id); ok && p.gating {
		p.gating = false
		r.listsInFlight--
		r.sendServer(m.line)
		r.drain()
		return true
	}
	return false
}

// codeInvalidParams is JSON-RPC's error code for invalid params: the name of
// an unknown tool or prompt, as MCP servers answer it.
const codeInvalidParams = -32602

// usesDefinition returns the definition a request uses by name: the tool of
// tools/call, the prompt of prompts/get (k is "" for other requests). ok is
// false when the params do not read strictly as an object with a string
// name: the request is then refused, since a lenient reader could take
// another name from them.
func usesDefinition(env *mcpwire.Message) (k digest.Kind, name string, ok bool) {
	switch env.Method {
	case "tools/call":
		k = digest.KindTool
	case "prompts/get":
		k = digest.KindPrompt
	default:
		return "", "", false
	}
	if len(env.Params) == 0 || env.Params[0] != '{' {
		return k, "", false
	}
	m, err := digest.ReadMembers(env.Params, "name")
	if err != nil {
		return k, "", false
	}
	v, present := m["name"]
	if !present || len(v) == 0 || v[0] != '"' {
		return k, "", false
	}
	name, err = digest.DecodeString(v)
	return k, name, err == nil
}

// cancelledID returns the raw requestId of notifications/cancelled params.
func cancelledID(params []byte) []byte {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := digest.ReadMembers(params, "requestId")
	if err != nil {
		return nil
	}
	return m["requestId"]
}

// passesEarly reports whether a client message may overtake held ones before
// the start-up check: the handshake, pings and cancellations, which the
// held messages wait for.
func (r *relay) passesEarly(m *inbound) bool {
	if r.checked || m.perr != nil || m.blank {
		return false
	}
	switch m.env.Kind {
	case mcpwire.KindRequest:
		return m.env.Method == mcpwire.MethodInitialize || m.env.Method == mcpwire.MethodDiscover || m.env.Method == mcpwire.MethodPing
	case mcpwire.KindNotification:
		return m.env.Method == mcpwire.MethodCancelled
	}
	return false
}

// clientMessage forwards one client message, or holds it until the
// start-up check has passed. It reports whether the message was consumed
// (false: it stays held and the draining stops).
func (r *relay) clientMessage(m *inbound) bool {
	if errors.Is(m.perr, mcpwire.ErrBatch) {
		// MCP has no batches since 2025-06-18; relaying one would bring back
		// a batch of answers the proxy would have to take apart to check.
		r.answer([]byte("null"), -32600, "mcpsign proxy: JSON-RPC batches are not supported", nil)
		return true
	}
	if m.blank {
		r.sendServer(m.line)
		return true
	}
	if m.perr != nil {
		// Not a message the proxy can read strictly: it is not relayed,
		// since the server could read it as a request the proxy does not
		// track, and its answer would answer nothing pending.
		io.WriteString(r.o.Stderr, "mcpsign proxy: dropped a message from the client that is not strict JSON-RPC: "+textsafe.Escape(m.perr.Error())+"\n")
		return true
	}
	env := &m.env
	switch env.Kind {
	case mcpwire.KindRequest:
		handshake := env.Method == mcpwire.MethodInitialize || env.Method == mcpwire.MethodDiscover
		if !r.checked && !handshake && env.Method != mcpwire.MethodPing {
			if !r.handshaking {
				// The 2026-07-28 generation needs no handshake: the first
				// request starts the check, with its _meta.
				meta := mcpwire.MetaOf(env.Params)
				r.clientCaps = metaCapabilities(meta)
				r.startTask(&task{what: "start-up listing", startup: true, discover: meta})
			}
			return false
		}
		if r.listsInFlight > 0 && env.Method != mcpwire.MethodPing {
			// A listing the client will see is unanswered: what the server
			// says in it is checked before anything else reaches the server.
			return false
		}
		if r.resourceRequest(env) {
			return true // decided by the resources mode (resources.go)
		}
		if k, name, ok := usesDefinition(env); k != "" && r.approved != nil && (!ok || !r.approved.hasKey(k, name)) {
			if !ok {
				// Params mcpsign cannot read strictly ("Name" beside "name",
				// a repeated name) could name another tool to the server.
				r.answer(env.ID, codeInvalidParams, "mcpsign proxy: the "+string(k)+" name of "+env.Method+" cannot be read strictly", nil)
				return true
			}
			// A call of a tool (or a prompt) that is not among the approved
			// definitions never reaches the server, whatever the client
			// learnt it from: the server may have changed under the proxy
			// (a rewritten lock, a list_changed still on its way).
			r.answer(env.ID, codeInvalidParams, "mcpsign proxy: "+string(k)+" "+strconv.Quote(textsafe.Cut(name, 200))+" is not among the approved definitions", nil)
			return true
		}
		if r.pending.Len() >= MaxInFlight {
			r.answer(env.ID, -32603, "mcpsign proxy: too many requests in flight", nil)
			return true
		}
		p := &pendingReq{id: env.ID, method: env.Method}
		switch {
		case handshake:
			r.handshaking = true
			r.awaitHandshake(env.Method)
			if env.Method == mcpwire.MethodDiscover {
				p.meta = mcpwire.MetaOf(env.Params)
				r.clientCaps = metaCapabilities(p.meta)
			} else {
				r.clientCaps = initializeCapabilities(env.Params)
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
		if err := r.pending.Add(env.ID, p); err != nil {
			r.answer(env.ID, -32600, "mcpsign proxy: a request with this id is already in flight", nil)
			return true
		}
		if p.gating {
			r.listsInFlight++
		}
	case mcpwire.KindNotification:
		if r.listsInFlight > 0 && env.Method != mcpwire.MethodCancelled {
			return false // in order behind the requests held
		}
		if !r.checked && env.Method != mcpwire.MethodCancelled {
			return false // held until the start-up check has passed
		}
		if env.Method == mcpwire.MethodInitialized && r.dropInitialized {
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
	if m.perr != nil {
		// A protocol violation is not held behind a check: it blocks now
		// (a check waiting for an answer the violation carried would
		// otherwise wait for its timeout).
		r.block(&BlockedError{What: "a message from the server", Err: m.perr})
		return
	}
	if r.gateClosed() && !(!m.blank && m.env.Kind == mcpwire.KindRequest && passesCheck(m.env.Method) && len(r.heldServer) == 0) {
		r.hold(&r.heldServer, m)
		return
	}
	r.serverMessage(m)
}

// passesCheck reports whether a server request may reach the client while
// a check holds the server's traffic: a server may wait for the answer
// before it answers the proxy's listing, and these carry nothing for a
// model (a ping; roots/list, which asks the client for its roots).
func passesCheck(method string) bool {
	return method == mcpwire.MethodPing || method == "roots/list"
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
	switch env.Kind {
	case mcpwire.KindResponse:
		// Tied to a request by its exact id only: anything a client could
		// match otherwise, or an answer to nothing pending, would reach the
		// client as an answer the proxy did not check.
		p, err := r.pending.Take(env.ID)
		if err != nil {
			r.block(&BlockedError{What: "a response from the server", Err: err})
			return
		}
		if p.gating {
			p.gating = false
			r.listsInFlight--
			defer r.drainClient()
		}
		subjID := p.id
		if env.Result != nil {
			switch p.method {
			case mcpwire.MethodInitialize:
				r.handshaking = false
				h, err := mcpwire.ParseInitialize(env.Result)
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
			case mcpwire.MethodDiscover:
				r.handshaking = false
				r.discovered(m, p)
				return
			}
		}
		if p.method == mcpwire.MethodInitialize || p.method == mcpwire.MethodDiscover {
			r.handshaking = false // an error answer: the client tries again or falls back
		}
		if r.lists(env) != 0 {
			r.listResult(m, p)
			return
		}
	case mcpwire.KindNotification:
		if mcpwire.IsListChanged(env.Method) {
			if !r.checked {
				r.sendClient(m.line)
				return
			}
			r.startTask(&task{what: "re-listing after " + env.Method, subject: m, relist: true, helloR: r.session})
			return
		}
	}
	r.sendClient(m.line)
}

// discovered handles the server's answer to the client's server/discover.
func (r *relay) discovered(m *inbound, p *pendingReq) {
	h, modern, err := mcpwire.ParseDiscover(m.env.Result, p.meta, proxyClientInfo)
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
	if equalInstructions(h.Instructions, r.approved.snap.Instructions) {
		r.sendClient(m.line)
		return
	}
	snap := *r.approved.snap
	snap.Instructions = h.Instructions
	r.startTask(&task{what: "server/discover result", subject: m, subjID: p.id, snap: &snap, helloR: r.session})
}

func equalInstructions(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
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
	for _, k := range r.checkedKinds() {
		if r.lists(&m.env)&mcpwire.ListFlag(k) == 0 {
			continue
		}
		items, next, hasNext, err := digest.SplitList(k, m.env.Result)
		if err != nil {
			r.block(&BlockedError{What: what, Err: err, subjectID: subjID})
			return
		}
		if hasNext && next == "" {
			// go-sdk takes an empty cursor for the last page, the
			// TypeScript SDK asks for it: the two would hold different
			// listings (the proxy's own listing refuses it too).
			r.block(&BlockedError{What: what, Err: fmt.Errorf("%w: an empty nextCursor, which clients read differently", mcpwire.ErrProtocol), subjectID: subjID})
			return
		}
		// Only an answer to the client's own list request of this kind
		// continues a listing: a list in any other result is checked page
		// by page, and keeps nothing (else a server could make the proxy
		// keep cursors without bound).
		list := p != nil && p.kind == k
		var ch *chain
		if list {
			if p.cursor == nil {
				ch = &chain{started: true}
			} else if c := r.chains[k][*p.cursor]; c != nil {
				ch = c
				r.dropChain(k, *p.cursor)
			}
		}
		if ch == nil {
			ch = &chain{} // a page whose listing the proxy did not see begin
		}
		if list {
			if ch.cursors == nil {
				ch.cursors = map[string]bool{}
			}
			if p.cursor != nil {
				ch.cursors[*p.cursor] = true
			}
			if hasNext && ch.cursors[next] {
				// The client would page forever, and hold nothing the
				// proxy's own listing (or verify-pin) would accept.
				r.block(&BlockedError{What: what, Err: fmt.Errorf("%w: cursor %s handed again in one listing", mcpwire.ErrCursorLoop, textsafe.RawQuote(textsafe.Cut(next, 80))), subjectID: subjID})
				return
			}
			if hasNext {
				ch.cursors[next] = true
			}
		}
		ch.items = append(ch.items, items...)
		ch.pages++
		ch.bytes += len(m.line)
		if ch.pages > MaxPages {
			r.block(&BlockedError{What: what, Err: fmt.Errorf("a listing of more than %d pages", MaxPages), subjectID: subjID})
			return
		}
		complete := ch.started && !hasNext
		if hasNext && list {
			if r.chains[k] == nil {
				r.chains[k] = map[string]*chain{}
			}
			if len(r.chains[k]) >= maxChains {
				for c := range r.chains[k] {
					r.dropChain(k, c)
					break
				}
			}
			ch.bytes += len(next)
			r.chains[k][next] = ch
			r.chainBytes += ch.bytes
			if r.chainBytes > r.o.MaxHeldBytes {
				r.block(&BlockedError{What: what, Err: fmt.Errorf("more than %d bytes of listings the client is still paging through", r.o.MaxHeldBytes), subjectID: subjID})
				return
			}
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

// cursorOf returns the cursor of list request params, or nil.
func cursorOf(params []byte) *string {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := digest.ReadMembers(params, "cursor")
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
	t.clientCaps = r.clientCaps
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
		full, err := r.listAll(ctx, t.helloR, t.clientCaps)
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
			params, _ := json.Marshal(struct {
				Meta json.RawMessage `json:"_meta"`
			}{mustMeta(meta)})
			res, err := r.Call(ctx, mcpwire.MethodDiscover, params)
			var modern bool
			if err == nil {
				h, modern, err = mcpwire.ParseDiscover(res, meta, proxyClientInfo)
			}
			if err != nil {
				return taskResult{err: fmt.Errorf("server/discover: %w", err)}
			}
			if !modern {
				return taskResult{err: errors.New("server/discover: the server offers no protocol version of the 2026-07-28 generation, and the client sent no initialize")}
			}
		}
		snap, err := r.listAll(ctx, h, t.clientCaps)
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
	version := mcpwire.ProtocolModern
	if s, ok := mcpwire.MetaVersion(clientMeta); ok && s >= mcpwire.ProtocolModern {
		version = s
	}
	meta, _ := mcpwire.RequestMeta(clientMeta, version, proxyClientInfo)
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

// drainClient lets held client messages go on once no check and no
// listing the client will see holds them.
func (r *relay) drainClient() {
	if r.listsInFlight == 0 && len(r.heldClient) > 0 && !r.gateClosed() && r.blocked == nil {
		r.drain()
	}
}

// drain processes the held messages in order until a check starts again.
func (r *relay) drain() {
	if r.draining {
		return // the drain below this call goes on with what is left
	}
	r.draining = true
	defer func() { r.draining = false }()
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
		if b.Decision.FirstUse {
			msg = FirstUseMessage
		}
		if len(b.Decision.Findings) > 0 {
			data["findings"] = b.Decision.Findings
		}
	}
	r.blockMsg, r.blockData = msg, data
	if b.subjectID != nil {
		r.answer(b.subjectID, BlockedCode, msg, data)
	}
	if t := r.running; t != nil && t.subjID != nil && !bytes.Equal(t.subjID, b.subjectID) {
		// The request whose held answer a running check is about is
		// answered here: the check's own end finds the session blocked
		// and answers nothing.
		r.answer(t.subjID, BlockedCode, msg, data)
	}
	r.pending.Drain(func(id []byte, _ *pendingReq) {
		r.answer(id, BlockedCode, msg, data)
	})
	r.listsInFlight = 0
	for _, m := range r.heldClient {
		if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindRequest {
			r.answer(m.env.ID, BlockedCode, msg, data)
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

// interrupted ends a session the proxy's caller cancelled (SIGINT, SIGTERM):
// every request still waiting for the server is answered with
// InterruptedCode, so that no client waits for an answer that cannot come,
// and stderr says why the server is stopped.
func (r *relay) interrupted(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.blocked != nil {
		return // every request is answered already
	}
	why := cause.Error()
	if !strings.HasPrefix(why, "interrupted") {
		why = "interrupted (" + why + ")"
	}
	msg := "mcpsign proxy: " + textsafe.Escape(why) + ": " + r.stoppedText()
	if t := r.running; t != nil && t.subjID != nil {
		r.answer(t.subjID, InterruptedCode, msg, nil)
	}
	r.pending.Drain(func(id []byte, _ *pendingReq) {
		r.answer(id, InterruptedCode, msg, nil)
	})
	for _, m := range r.heldClient {
		if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindRequest {
			r.answer(m.env.ID, InterruptedCode, msg, nil)
		}
	}
	r.heldClient, r.heldServer, r.heldBytes = nil, nil, 0
	r.toServer.drop()
	io.WriteString(r.o.Stderr, msg+"\n")
}

// report writes why the session was blocked, escaped.
func (r *relay) report(b *BlockedError) {
	var sb strings.Builder
	if b.Decision != nil {
		what := "the server's definitions changed"
		if b.Decision.FirstUse {
			what = "first use refused, the definitions were not approved"
		}
		sb.WriteString("mcpsign proxy: BLOCKED: " + what + " (" + textsafe.Escape(b.What) + ")")
		if b.Decision.Summary != "" {
			sb.WriteString(": " + textsafe.Escape(b.Decision.Summary))
		}
		sb.WriteString("\n")
		_ = b.Decision.WriteReport(&sb, "  ")
	} else {
		sb.WriteString("mcpsign proxy: BLOCKED: " + textsafe.Escape(b.What) + " could not be checked: " + textsafe.EscapeKeepLayout(b.Err.Error()) + "\n")
	}
	sb.WriteString("mcpsign proxy: " + r.stoppedText() + "; every request is answered with error " + fmt.Sprint(BlockedCode) + " until the client disconnects\n")
	io.WriteString(r.o.Stderr, sb.String())
}

// stoppedText says what the proxy did to the server when it blocked or was
// interrupted: a stdio server is stopped; with a server at a URL, which
// the proxy does not run, the session is closed.
func (r *relay) stoppedText() string {
	if r.o.URL != "" {
		return "the session with the server was closed"
	}
	return "the server was stopped"
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
	r.respond(id, "error", eb)
}

// respond writes a response of the proxy's own to the client: member
// ("result" or "error") with its JSON value.
func (r *relay) respond(id []byte, member string, value []byte) {
	line := make([]byte, 0, 32+len(id)+len(member)+len(value))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, `,"`+member+`":`...)
	line = append(line, value...)
	line = append(line, "}\n"...)
	r.sendClient(line)
}
