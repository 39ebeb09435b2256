package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/mcpwire/proctree"
	"github.com/mcpsign/mcpsign/internal/rawio"
)

// inbound is one line read from a peer, parsed.
type inbound struct {
	line  []byte          // exact bytes, line end included
	env   mcpwire.Message // valid when perr is nil
	perr  error           // why the line is not a JSON-RPC message
	blank bool            // only white space
	// relisted: a request naming a definition the approved set does not
	// hold, for which the proxy listed the server again (refusal).
	relisted bool
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

// relay is one proxied session. Each peer's reader handles its messages
// on its own goroutine under mu (a pushConn's readers, one at a time), as does a check's goroutine with its
// result; run only waits for the end.
type relay struct {
	o        *Options
	c        UpstreamConn // the server: a child process, an HTTP endpoint, a transport
	clientIn io.Reader
	// clientDeadline is the client's input when it takes a read deadline
	// (an *os.File in the poller, a net.Conn): its reader is woken so at
	// the end (end).
	clientDeadline readDeadliner
	toClient       *outQueue
	toServer       *outQueue

	prefix    string // of the proxy's own request ids: "mcpsign-" and 16 random hex digits and "-"
	ownSeq    atomic.Int64
	ownMu     sync.Mutex
	own       map[string]chan ownReply
	ownClosed error

	// wake tells run that the session may have ended.
	wake chan struct{}
	// wakeMu guards wakeCancel: when run reads the client itself
	// (readHere), signal also ends the context of that read.
	wakeMu     sync.Mutex
	wakeCancel context.CancelFunc
	// side delivers events and stderr lines outside mu (events.go).
	side *sideQueue
	// ctx is the session's context (set by run): every check derives from
	// it; tasks counts the checks running.
	ctx   context.Context
	tasks sync.WaitGroup
	// ended: run is returning, nothing more is handled (set under mu).
	ended atomic.Bool

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
	cancelled       cancelledIDs // of requests cancelled in flight (cancel.go)
	listsInFlight   int          // client list requests forwarded and not yet answered
	draining        bool         // drain is running: a nested call leaves the work to it
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
	// first 2026-07-28 request), read once; nil when they cannot be read
	// (the check then takes them as unknown: removal stays drift).
	clientCaps *clientCaps
}

func newRelay(o *Options, c UpstreamConn, in io.Reader, out io.Writer) *relay {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	d, _ := in.(readDeadliner)
	return &relay{
		o:              o,
		c:              c,
		clientDeadline: d,
		// Pipes in the poller are read and written by raw system calls
		// (internal/rawio): a relay is idle between messages, and going
		// through the runtime's system call path would wake its monitor
		// thread on every message.
		clientIn: rawio.Reader(in),
		toClient: newOutQueue(rawio.Writer(out), o.MaxHeldBytes),
		toServer: newOutQueue(connWriter{c}, o.MaxHeldBytes),
		prefix:   "mcpsign-" + hex.EncodeToString(rnd[:]) + "-",
		own:      map[string]chan ownReply{},
		wake:     make(chan struct{}, 1),
		side:     newSideQueue(),
		chains:   map[digest.Kind]map[string]*chain{},
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
	r.wakeMu.Lock()
	if r.wakeCancel != nil {
		r.wakeCancel()
	}
	r.wakeMu.Unlock()
}

func (r *relay) run(ctx context.Context) error {
	// The session's context: every check derives from it, and it ends when
	// run does. It carries ctx's values, not its cancellation: an
	// interrupted session is answered as such (interrupted), not blocked
	// by a check that saw its context end first.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.ctx = sctx
	// The server's side first: a pushConn must have its receiver before
	// the client's first message is sent.
	var serverDone <-chan struct{}
	if pc, ok := r.c.(pushConn); ok {
		serverDone = r.goPushed(pc)
	} else {
		serverDone = r.goRead(r.c.Receive, true)
	}
	var clientNext func() ([]byte, error)
	src, here := r.clientIn.(ContextLineSource)
	here = here && r.isPushed()
	if ls, ok := r.clientIn.(LineSource); ok {
		clientNext = boundedLines(ls, r.o.MaxMessageBytes)
	} else {
		clientNext = mcpwire.NewLineReader(r.clientIn, r.o.MaxMessageBytes).Next
	}
	var clientDone <-chan struct{}
	if here {
		done := make(chan struct{})
		close(done) // read on this goroutine: done when run returns
		clientDone = done
	} else {
		clientDone = r.goRead(clientNext, false)
	}
	defer r.closeSide()
	defer r.toClient.wait(r.o.ShutdownGrace)
	defer r.end(cancel, clientDone, serverDone)
	if here {
		if done, err := r.readHere(ctx, src); done {
			return err
		}
	}
	var endTimer <-chan time.Time // after the client left: how long the server gets to finish
	closing := false
	for {
		select {
		case <-r.wake:
		case <-endTimer:
			return r.finish()
		case <-ctx.Done():
			return r.interrupt(ctx)
		}
		if done, err := r.look(); done {
			return err
		}
		r.mu.Lock()
		blocked, clientEOF := r.blocked, r.clientEOF
		r.mu.Unlock()
		if blocked == nil && clientEOF && !closing {
			// The client is gone: ask the server to exit once what the
			// client sent is written, and let it finish for a while.
			closing = true
			go r.toServer.closeWhenDrained(r.c.CloseInput)
			endTimer = time.After(r.o.ShutdownGrace)
		}
	}
}

// interrupt ends a session whose context (Run's) ended (interrupted),
// and stops the server.
func (r *relay) interrupt(ctx context.Context) error {
	r.interrupted(context.Cause(ctx))
	r.c.Stop(min(r.o.ShutdownGrace, proctree.PromptGrace))
	return context.Cause(ctx)
}

// look looks at the session's state after a signal; done reports that
// the session ended, with err (a blocked session answers every request
// until the client leaves).
func (r *relay) look() (done bool, err error) {
	r.mu.Lock()
	blocked, clientEOF, serverEOF, running := r.blocked, r.clientEOF, r.serverEOF, r.running != nil
	overflow := r.overflow
	r.mu.Unlock()
	switch {
	case blocked != nil && clientEOF:
		<-r.stopped
		return true, blocked
	case blocked != nil:
		return false, nil
	case overflow:
		r.c.Stop(r.o.ShutdownGrace)
		return true, fmt.Errorf("a peer stopped reading: more than %d bytes are queued for it", r.o.MaxHeldBytes)
	case r.toClient.failed() != nil:
		// The client stopped reading: the session is over.
		r.c.Stop(r.o.ShutdownGrace)
		return true, nil
	case serverEOF && !running:
		return true, r.finish()
	}
	return false, nil
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
	r.c.Wait(r.o.ShutdownGrace)
	status, cleanly := r.c.Exit()
	r.c.Stop(r.o.ShutdownGrace)
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
		if gen == r.handshakeGen && r.handshaking && r.blocked == nil && !r.ended.Load() {
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
	if !m.blank && m.env.Kind != mcpwire.KindResponse {
		// What the server asks of the client on its own is decided at
		// once, held or not: a refused request never waits behind a check.
		if why := r.o.ServerRequests.serverCallRefusal(&m.env, r.clientCaps); why != "" {
			r.refuseServerCall(&m.env, why)
			return
		}
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
		r.serverResponse(m)
		return
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

// serverResponse handles the server's answer to a client request.
func (r *relay) serverResponse(m *inbound) {
	env := &m.env
	// Tied to a request by its exact id only: anything a client could
	// match otherwise, or an answer to nothing pending, would reach the
	// client as an answer the proxy did not check.
	if r.cancelled.take(env.ID) {
		// A late answer to a request the client cancelled, which the proxy
		// answered already: it reaches no one (cancel).
		return
	}
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
	if p.method == mcpwire.MethodInitialize || p.method == mcpwire.MethodDiscover {
		r.handshaking = false // answered: a result, or an error the client falls back on
	}
	if env.Result != nil && !r.resultPasses(m, p) {
		return
	}
	if r.lists(env) != 0 {
		r.listResult(m, p)
		return
	}
	r.sendClient(m.line)
}

// resultPasses decides a result before it is read further: an
// input_required result the client may not be asked for is refused, one
// that does not read strictly blocks, and the handshake's answer starts
// the start-up check. It reports whether the result goes on to be relayed
// (or checked as a listing).
func (r *relay) resultPasses(m *inbound, p *pendingReq) bool {
	env := &m.env
	// A 2026-07-28 input_required result asks the client for what a
	// server request would: the same rule decides it, before anything
	// relays or reads it further.
	why, unreadable := r.o.ServerRequests.inputRequestsRefusal(env.Result, r.clientCaps)
	switch {
	case unreadable:
		// Not every reader after this one reads the members it asks about
		// (a listing without its list member is relayed as it is): a
		// result that does not read strictly here blocks the session,
		// whatever it answers.
		r.block(&BlockedError{What: "the " + p.method + " result", Err: fmt.Errorf("%w: %s", mcpwire.ErrProtocol, why), subjectID: p.id})
		return false
	case why != "":
		r.refuseInputRequests(p.id, p.method, why)
		return false
	}
	switch p.method {
	case mcpwire.MethodInitialize:
		h, err := mcpwire.ParseInitialize(env.Result)
		if err != nil {
			r.block(&BlockedError{What: "the initialize result", Err: err, subjectID: p.id})
			return false
		}
		// Servers finish setting up on notifications/initialized (some
		// register tools that depend on the client's capabilities then):
		// the proxy sends it itself before it lists, so that it sees what
		// the client will, and drops the client's own.
		r.sendServer([]byte(initializedLine))
		r.dropInitialized = true
		r.startTask(&task{what: "start-up listing", startup: true, subject: m, subjID: p.id, hello: h})
		return false
	case mcpwire.MethodDiscover:
		r.discovered(m, p)
		return false
	}
	return true
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
		if !r.clientMessage(m, false) {
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
