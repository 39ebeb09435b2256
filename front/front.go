package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

// Defaults of [Options].
const (
	DefaultMaxSessions = 256
	DefaultIdleTimeout = 10 * time.Minute
	DefaultRetryAfter  = 5 * time.Second
	DefaultReadyTTL    = 10 * time.Second
	// DefaultWriteTimeout bounds one write to a client: a client that does
	// not read loses its stream, not the session's relay.
	DefaultWriteTimeout = 30 * time.Second
)

// HeaderSessionID is the Streamable HTTP session header.
const HeaderSessionID = "Mcp-Session-Id"

// Options configure a [Front].
type Options struct {
	// Load returns the options of every relay the front starts: the
	// upstream (Command or URL, Header, HTTPClient, Env, Dir), the Policy
	// (one, shared by all sessions: a proxy.LockPolicy, say), the resources
	// mode, the server-request rules and the limits. New calls it once, and
	// Reload again; the front sets OnEvent and Stderr itself and wraps the
	// Policy (every check of every session goes through it one at a time).
	// Required.
	Load func(ctx context.Context) (proxy.Options, error)
	// Logger receives the front's logs (sessions, blocks, the upstream's
	// stderr, escaped by the relay). It must escape the strings it writes,
	// which servers and clients chose, as internal/service.NewLogger's
	// does: the front passes them as they are (lists of strings, which
	// slog handlers do not look into, it escapes itself). Nil discards
	// them.
	Logger *slog.Logger
	// MaxSessions caps the client sessions open at once (each one a relay,
	// and a process for a stdio upstream); past it a new session is
	// answered 503 with Retry-After. Zero means DefaultMaxSessions.
	MaxSessions int
	// IdleTimeout closes a session that received no POST for this long.
	// Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RetryAfter is said in the Retry-After of a 503. Zero means
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// ReadyTTL is how long a passed check (a session's start-up check or
	// Ready's own probe) makes Ready pass without probing again. Zero means
	// DefaultReadyTTL.
	ReadyTTL time.Duration
	// WriteTimeout bounds each write to a client. Zero means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PassAuthorization sends the Authorization a client presents with its
	// initialize (or its stateless request) to an HTTP upstream, with every
	// request of that session, for upstreams that authorize each user
	// themselves. It goes to the upstream's origin only (redirects are
	// followed within it), needs https or a loopback upstream
	// (netguard.CheckServerURL with credentials). It is never logged. Off,
	// a client's Authorization goes nowhere. Either way a session is bound
	// to the Authorization it started with: a later request of it with
	// another is refused (403).
	PassAuthorization bool
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.ReadyTTL <= 0 {
		o.ReadyTTL = DefaultReadyTTL
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return o
}

// Errors of Ready, wrapped in a *NotReadyError.
var (
	// ErrDrifted: a relay saw the upstream's definitions change (a
	// refusal); cleared by a roll-forward or Reload.
	ErrDrifted = errors.New("the upstream's definitions changed")
	// ErrUnchecked: the readiness probe could not reach or check the
	// upstream.
	ErrUnchecked = errors.New("the upstream could not be checked")
	// ErrDraining: Drain was called.
	ErrDraining = errors.New("the front is draining")
)

// NotReadyError is the error of Ready: which check failed, and why.
type NotReadyError struct {
	// Check names the failed check: "drift", "upstream", "drain".
	Check string
	// Err wraps ErrDrifted, ErrUnchecked or ErrDraining, with the cause.
	Err error
}

func (e *NotReadyError) Error() string { return "not ready: " + e.Check + ": " + e.Err.Error() }

func (e *NotReadyError) Unwrap() error { return e.Err }

// generation is one loaded configuration: what New or a Reload read.
type generation struct {
	opts   proxy.Options
	policy proxy.Policy // opts.Policy, observed by the front
}

// Front is the HTTP front. It is an http.Handler of the MCP endpoint.
type Front struct {
	o   Options
	log *slog.Logger
	m   *metrics

	ctx    context.Context // of every relay; cancelled when Drain gives up waiting
	cancel context.CancelFunc

	gen     atomic.Pointer[generation]
	checkMu sync.Mutex // one policy check at a time, across sessions

	mu       sync.Mutex
	sessions map[string]*session
	// relays counts the relays of sessions and stateless requests until
	// their proxy.Run returned, i.e. until their upstream was stopped (a
	// closed session's process may take ShutdownGrace to exit): they are
	// capped by MaxSessions, each one may be a process.
	relays   int
	draining bool
	// drift is the refusal that marked the upstream drifted (nil: none).
	drift   *proxy.Decision
	readyAt time.Time // when a check last passed

	// approved are the approved definitions the relays share
	// (proxy.Options.Approved): sessions of one server hold one copy.
	approved proxy.ApprovedSets

	// probing holds the one readiness probe running: Ready calls that
	// arrive together wait for it instead of each starting a relay.
	probing chan struct{}

	inflight sync.WaitGroup // HTTP requests being served
	runs     sync.WaitGroup // relays running
	idleStop chan struct{}
}

// New loads the configuration (Options.Load) and returns the front. The
// upstream is not contacted: Ready probes it.
func New(ctx context.Context, o Options) (*Front, error) {
	if o.Load == nil {
		return nil, errors.New("front: no Load function given")
	}
	o = o.withDefaults()
	f := &Front{
		o:        o,
		log:      o.Logger,
		m:        newMetrics(),
		sessions: map[string]*session{},
		idleStop: make(chan struct{}),
		probing:  make(chan struct{}, 1),
	}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g, err := f.load(ctx)
	if err != nil {
		f.cancel()
		return nil, err
	}
	f.gen.Store(g)
	go f.reapIdle()
	return f, nil
}

// load reads a generation.
func (f *Front) load(ctx context.Context) (*generation, error) {
	opts, err := f.o.Load(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Policy == nil {
		return nil, errors.New("front: the loaded options have no policy")
	}
	if len(opts.Command) == 0 && opts.URL == "" {
		return nil, errors.New("front: the loaded options name no upstream")
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = proxy.DefaultMaxMessageBytes
	}
	if opts.Approved == nil {
		opts.Approved = &f.approved
	}
	if opts.URL != "" && opts.HTTPClient == nil {
		// Every session keeps a connection or two to the one upstream:
		// http.DefaultTransport keeps 2 idle per host, and would dial again
		// for most requests of many sessions.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 2*f.o.MaxSessions + 16
		opts.HTTPClient = &http.Client{Transport: newUpstreamTransport(t)}
	}
	return &generation{opts: opts, policy: f.observe(opts.Policy)}, nil
}

// Reload loads the configuration again (Options.Load) and makes it the one
// of every later session; sessions already open keep theirs. When it fails
// the configuration in force is kept and the error says why. A successful
// Reload clears the drift mark: the lock it read is the one in force now.
func (f *Front) Reload(ctx context.Context) error {
	g, err := f.load(ctx)
	if err != nil {
		f.log.Error("reload failed: the configuration in force is kept", "error", err.Error())
		return fmt.Errorf("reload: the configuration in force is kept: %w", err)
	}
	f.gen.Store(g)
	f.mu.Lock()
	f.drift = nil
	f.readyAt = time.Time{}
	f.mu.Unlock()
	f.m.drifted.Set(0)
	f.m.reloads.Inc()
	f.log.Info("reloaded: later sessions use the new configuration")
	return nil
}

// observe wraps a generation's policy: checks run one at a time across all
// sessions (so that one signed update rolls the lock forward once, and the
// sessions after it find it rolled forward), and their verdicts mark the
// upstream drifted or not.
func (f *Front) observe(p proxy.Policy) proxy.Policy {
	return proxy.PolicyFunc(func(ctx context.Context, snap *digest.Snapshot) (*proxy.Decision, error) {
		f.checkMu.Lock()
		defer f.checkMu.Unlock()
		d, err := p.Check(ctx, snap)
		if err != nil || d == nil {
			return d, err
		}
		switch {
		case d.Allow && d.Updated:
			if d.Drift != nil {
				f.m.rollForwards.Inc()
			}
			f.mu.Lock()
			f.drift = nil
			f.readyAt = time.Now()
			f.mu.Unlock()
			f.m.drifted.Set(0)
			f.log.Info("definitions approved: the lock in force changed", "summary", d.Summary)
		case d.Allow:
			f.mu.Lock()
			if f.drift == nil {
				f.readyAt = time.Now()
			}
			f.mu.Unlock()
		case clientDependent(d.Findings):
			// The listing was read under other client capabilities than
			// the lock's and only adds or lacks definitions: a server may
			// offer other ones to such a client. Its relay is refused, but that says
			// nothing of the server having changed, and a client must not
			// be able to mark the upstream drifted for everyone
			// (docs/SERVE.md).
			f.log.Warn("definitions refused for a client with other capabilities than the lock's: the upstream is not marked drifted", "summary", textsafe.Escape(d.Summary), "findings", escapeAll(d.Findings))
		case !d.FirstUse:
			f.mu.Lock()
			f.drift = d
			f.mu.Unlock()
			f.m.drifted.Set(1)
			f.log.Warn("upstream drifted: definitions refused", "summary", d.Summary, "findings", escapeAll(d.Findings))
		}
		return d, nil
	})
}

// clientDependent reports whether a refusal's findings (rule, then the
// subject, as pin.Report.FindingIDs gives them) say that the client
// announced other capabilities than the lock's and that every error is
// about a definition offered to it or not, as a whole (added or removed):
// no definition the lock holds changed.
func clientDependent(findings []string) bool {
	if !slices.Contains(findings, pin.RuleClientCapabilitiesDiffer) {
		return false
	}
	added := map[string]bool{}
	for _, fd := range findings {
		rule, subject, _ := strings.Cut(fd, " ")
		switch rule {
		case pin.RuleToolAdded, pin.RulePromptAdded, pin.RuleResourceTemplateAdded, pin.RuleResourceAdded,
			pin.RuleToolRemoved, pin.RulePromptRemoved, pin.RuleResourceTemplateRemoved, pin.RuleResourceRemoved:
			added[subject] = true
		}
	}
	for _, fd := range findings {
		rule, subject, _ := strings.Cut(fd, " ")
		if rule != pin.RuleClientCapabilitiesDiffer && !added[subject] {
			return false
		}
	}
	return len(added) > 0
}

// Ready reports whether the front can serve: not draining, no drift seen
// since the last roll-forward or Reload, and the upstream reachable with
// definitions the lock in force approves (proven, when the lock must be).
// A check that passed within ReadyTTL stands; otherwise Ready runs one
// probe: a relay of its own with an initialize, which passes only once the
// start-up listing was checked. The error is a *NotReadyError.
func (f *Front) Ready(ctx context.Context) error {
	f.mu.Lock()
	draining, drift, readyAt := f.draining, f.drift, f.readyAt
	f.mu.Unlock()
	switch {
	case draining:
		return &NotReadyError{Check: "drain", Err: ErrDraining}
	case drift != nil:
		return &NotReadyError{Check: "drift", Err: fmt.Errorf("%w: %s", ErrDrifted, textsafe.Escape(drift.Summary))}
	case !readyAt.IsZero() && time.Since(readyAt) < f.o.ReadyTTL:
		return nil
	}
	// One probe at a time: /readyz may be reachable by anyone, and each
	// probe is a relay (a process, for a stdio upstream). A call that
	// waited finds the check the probe before it passed.
	select {
	case f.probing <- struct{}{}:
		defer func() { <-f.probing }()
	case <-ctx.Done():
		return &NotReadyError{Check: "upstream", Err: fmt.Errorf("%w: %w", ErrUnchecked, ctx.Err())}
	}
	f.mu.Lock()
	drift, readyAt = f.drift, f.readyAt
	f.mu.Unlock()
	switch {
	case drift != nil:
		return &NotReadyError{Check: "drift", Err: fmt.Errorf("%w: %s", ErrDrifted, textsafe.Escape(drift.Summary))}
	case !readyAt.IsZero() && time.Since(readyAt) < f.o.ReadyTTL:
		return nil
	}
	err := f.probe(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.drift == nil {
		f.readyAt = time.Now()
	}
	f.mu.Unlock()
	return nil
}

// probeLine is the probe's initialize.
const probeLine = `{"jsonrpc":"2.0","id":"mcpsign-front-ready","method":"initialize","params":{"protocolVersion":"` + mcpwire.ProtocolLegacy + `","capabilities":{},"clientInfo":{"name":"mcpsign-front-ready","version":"0"}}}` + "\n"

// probe runs one relay that initializes and leaves once the answer (held
// until the start-up check passed) arrived.
func (f *Front) probe(ctx context.Context) error {
	opts := f.relayOptions("readiness", nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	pctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	errc := make(chan error, 1)
	f.mu.Lock()
	if f.draining { // Drain may be waiting for the relays already
		f.mu.Unlock()
		return &NotReadyError{Check: "drain", Err: ErrDraining}
	}
	f.runs.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.runs.Done()
		err := proxy.Run(pctx, inR, outW, opts)
		outW.Close()
		errc <- err
	}()
	go func() { _, _ = io.WriteString(inW, probeLine) }()
	answered := false
	lr := mcpwire.NewLineReader(outR, opts.MaxMessageBytes)
	for {
		line, err := lr.Next()
		if err != nil {
			break
		}
		m, perr := mcpwire.Parse(mcpwire.Content(line))
		if perr == nil && m.Kind == mcpwire.KindResponse && string(m.ID) == `"mcpsign-front-ready"` {
			answered = m.Result != nil
			break
		}
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	err := <-errc
	if answered && (err == nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	if ctx.Err() != nil {
		return &NotReadyError{Check: "upstream", Err: fmt.Errorf("%w: %w", ErrUnchecked, ctx.Err())}
	}
	var b *proxy.BlockedError
	if errors.As(err, &b) && b.Drift() && clientDependent(b.Decision.Findings) {
		// The probe announces no capabilities: a server that offers other
		// definitions to such a client changed nothing the lock holds.
		return nil
	}
	if errors.As(err, &b) && b.Drift() && !b.Decision.FirstUse {
		return &NotReadyError{Check: "drift", Err: fmt.Errorf("%w: %s", ErrDrifted, textsafe.Escape(b.Decision.Summary))}
	}
	if err == nil {
		err = errors.New("the upstream answered the initialize with an error")
	}
	return &NotReadyError{Check: "upstream", Err: fmt.Errorf("%w: %s", ErrUnchecked, textsafe.Escape(err.Error()))}
}

// relayOptions are the options of one relay of the configuration in force;
// who names it in the logs ("session ID", "stateless", "readiness"); auth
// is the client's Authorization, sent on when PassAuthorization says so.
func (f *Front) relayOptions(who string, auth []string) proxy.Options {
	g := f.gen.Load()
	o := g.opts
	if f.o.PassAuthorization && o.URL != "" && len(auth) > 0 {
		o.Header = o.Header.Clone()
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header["Authorization"] = slices.Clone(auth)
	}
	o.Policy = g.policy
	o.Stderr = &logWriter{log: f.log, who: who}
	o.OnEvent = func(e proxy.Event) { f.event(who, e) }
	return o
}

// event counts and logs a relay's event.
func (f *Front) event(who string, e proxy.Event) {
	switch e.Kind {
	case proxy.EventBlocked:
		rules := []string{"unchecked"}
		if e.Decision != nil && len(e.Decision.Findings) > 0 {
			rules = rules[:0]
			for _, fd := range e.Decision.Findings {
				rule, _, _ := strings.Cut(fd, " ")
				rules = append(rules, rule)
			}
		} else if e.Decision != nil {
			rules = []string{"refused"}
		}
		for _, r := range rules {
			f.m.blocks.WithLabelValues(r).Inc()
		}
		msg := ""
		if e.Err != nil {
			msg = e.Err.Error()
		} else if e.Decision != nil {
			msg = e.Decision.Summary
		}
		f.log.Warn("session blocked", "session", who, "what", e.What, "rules", rules, "reason", msg)
	case proxy.EventUpdated:
		f.log.Info("definitions approved", "session", who, "what", e.What)
	}
}

// Drain stops the front: new sessions and requests are answered 503; the
// requests in flight are waited for until ctx ends, and then those still
// waiting are answered by their relay (an interruption: JSON-RPC error
// -32603) or by the front; then every session is closed and every upstream
// process stopped. Every request in flight gets exactly one answer. It
// returns ctx's error when it had to interrupt requests.
func (f *Front) Drain(ctx context.Context) error {
	f.mu.Lock()
	if !f.draining {
		f.draining = true
		close(f.idleStop)
	}
	f.mu.Unlock()
	waited := make(chan struct{})
	go func() { f.inflight.Wait(); close(waited) }()
	// Past ctx, what is still written to a client gets WriteTimeout, and a
	// relay its upstream's stop: after that Drain returns whatever hangs.
	grace := f.o.WriteTimeout + f.gen.Load().opts.ShutdownGrace + time.Second
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = ctx.Err()
		f.cancel() // every relay answers what it holds, and stops its upstream
		waitAtMost(waited, grace)
	}
	for _, s := range f.allSessions() {
		s.close()
	}
	runs := make(chan struct{})
	go func() { f.runs.Wait(); close(runs) }()
	select {
	case <-runs:
	case <-ctx.Done():
		err = ctx.Err()
		f.cancel()
		waitAtMost(runs, grace)
	}
	f.cancel()
	return err
}

// waitAtMost waits for done, or d.
func waitAtMost(done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (f *Front) allSessions() []*session {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*session, 0, len(f.sessions))
	for _, s := range f.sessions {
		out = append(out, s)
	}
	return out
}

// reapIdle closes the sessions idle for IdleTimeout.
func (f *Front) reapIdle() {
	tick := time.NewTicker(max(f.o.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-f.idleStop:
			return
		case <-tick.C:
		}
		for _, s := range f.allSessions() {
			if s.idle(f.o.IdleTimeout) {
				f.log.Info("session idle: closed", "session", s.id, "idle_timeout", f.o.IdleTimeout.String())
				s.close()
			}
		}
	}
}

// ServeHTTP serves the MCP endpoint.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The POSTs are the requests in flight that Drain waits for; a GET
	// stream ends when its session is closed.
	f.mu.Lock()
	draining := f.draining
	if !draining && r.Method == http.MethodPost {
		f.inflight.Add(1)
		defer f.inflight.Done()
	}
	f.mu.Unlock()
	if draining {
		f.unavailable(w, "the server is shutting down")
		return
	}
	id := r.Header.Get(HeaderSessionID)
	switch r.Method {
	case http.MethodPost:
		f.servePOST(w, r, id)
	case http.MethodGet:
		if id == "" {
			// Nothing to stream without a session (2026-07-28 has no GET).
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "Method Not Allowed: GET needs an Mcp-Session-Id", http.StatusMethodNotAllowed)
			return
		}
		s := f.lookup(w, r, id)
		if s == nil {
			return
		}
		s.serve(w, r, jsonrpc.ID{})
	case http.MethodDelete:
		if id == "" {
			http.Error(w, "Bad Request: DELETE needs an Mcp-Session-Id", http.StatusBadRequest)
			return
		}
		s := f.lookup(w, r, id)
		if s == nil {
			return
		}
		s.close()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// lookup finds a session, or answers 404 as the transport says: the client
// starts a new session.
// A session that passes its client's Authorization on is refused (403) to
// a request with another.
func (f *Front) lookup(w http.ResponseWriter, r *http.Request, id string) *session {
	f.mu.Lock()
	s := f.sessions[id]
	f.mu.Unlock()
	switch {
	case s == nil:
		f.m.requests.WithLabelValues("unknown-session").Inc()
		http.Error(w, "Not Found: no such session", http.StatusNotFound)
	case !s.sameAuthorization(r):
		http.Error(w, "Forbidden: the session was started with other credentials", http.StatusForbidden)
		return nil
	}
	return s
}

func (f *Front) unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", strconv.Itoa(int((f.o.RetryAfter+time.Second-1)/time.Second)))
	http.Error(w, "Service Unavailable: "+why, http.StatusServiceUnavailable)
}

// servePOST reads one message (bounded, strict), then hands it to its
// session, starts a session (initialize) or relays it statelessly
// (2026-07-28).
func (f *Front) servePOST(w http.ResponseWriter, r *http.Request, id string) {
	start := time.Now()
	max := f.gen.Load().opts.MaxMessageBytes
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(max)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			rpcError(w, http.StatusRequestEntityTooLarge, nil, -32600, fmt.Sprintf("mcpsign front: the message is larger than %d bytes", max))
			return
		}
		http.Error(w, "Bad Request: the body could not be read", http.StatusBadRequest)
		return
	}
	msg, perr := mcpwire.Parse(bytes.TrimSpace(body))
	switch {
	case errors.Is(perr, mcpwire.ErrBatch):
		// As the stdio proxy: MCP has no batches since 2025-06-18, and a
		// batch's answers would have to be taken apart to be checked.
		f.m.requests.WithLabelValues("batch").Inc()
		rpcError(w, http.StatusBadRequest, nil, -32600, "mcpsign front: JSON-RPC batches are not supported")
		return
	case perr != nil:
		f.m.requests.WithLabelValues("invalid").Inc()
		rpcError(w, http.StatusBadRequest, nil, -32700, "mcpsign front: not a strict JSON-RPC message: "+perr.Error())
		return
	}
	var s *session
	if id != "" {
		if s = f.lookup(w, r, id); s == nil {
			return
		}
	}
	label := methodLabel(&msg)
	f.m.requests.WithLabelValues(label).Inc()
	if msg.Kind == mcpwire.KindRequest {
		defer func() { f.m.latency.WithLabelValues(label).Observe(time.Since(start).Seconds()) }()
	}
	if msg.Kind == mcpwire.KindRequest && !passesDrift(msg.Method) {
		f.mu.Lock()
		drift := f.drift
		f.mu.Unlock()
		if drift != nil {
			// The upstream is marked drifted: a session that checked it
			// before (its upstream session may be the drifted instance now,
			// without a list_changed) and a stateless request (whose call
			// may reach another instance than its listing did) get the
			// block's answer, not the drifted server (docs/SERVE.md).
			f.log.Debug("request refused: the upstream is marked drifted", "session", id, "method", label)
			rpcError(w, http.StatusOK, msg.ID, proxy.BlockedCode, proxy.BlockedMessage+": the upstream is marked drifted (another session or request saw its definitions change); relayed again after a roll-forward or a reload")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if s != nil {
		var call jsonrpc.ID
		if msg.Kind == mcpwire.KindRequest && msg.Method != mcpwire.MethodInitialize && !msg.NullID() {
			call, _ = idOf(msg.ID)
		}
		s.serve(w, r, call)
		return
	}
	switch {
	case modern(r, &msg):
		f.serveStateless(w, r, body, &msg)
	case msg.Kind == mcpwire.KindRequest && msg.Method == mcpwire.MethodInitialize:
		s, why := f.newSession(r)
		if s == nil {
			f.unavailable(w, why)
			return
		}
		s.serve(w, r, jsonrpc.ID{})
		if w.Header().Get(HeaderSessionID) != s.id {
			// The transport refused the initialize: the client was never
			// told the id, and could never DELETE the session.
			s.close()
		}
	case msg.Kind == mcpwire.KindRequest:
		rpcError(w, http.StatusBadRequest, msg.ID, -32600, "mcpsign front: no Mcp-Session-Id: start a session with initialize, or send the request under protocol "+mcpwire.ProtocolModern+" (its version in _meta)")
	default:
		http.Error(w, "Bad Request: a notification or response needs an Mcp-Session-Id", http.StatusBadRequest)
	}
}

// modern reports whether a message without a session belongs to the
// stateless generation: its _meta names protocol 2026-07-28 or later, or
// its header does, or it is server/discover.
func modern(r *http.Request, m *mcpwire.Message) bool {
	if m.Kind != mcpwire.KindRequest && m.Kind != mcpwire.KindNotification {
		return false
	}
	if m.Method == mcpwire.MethodDiscover {
		return true
	}
	if v, ok := mcpwire.MetaVersion(mcpwire.MetaOf(m.Params)); ok && v >= mcpwire.ProtocolModern {
		return true
	}
	return r.Header.Get("Mcp-Protocol-Version") >= mcpwire.ProtocolModern
}

// passesDrift reports whether a request goes on while the upstream is
// marked drifted: the handshakes, which start a relay whose start-up check
// may roll the lock forward (or block), and ping.
func passesDrift(method string) bool {
	return method == mcpwire.MethodInitialize || method == mcpwire.MethodDiscover || method == mcpwire.MethodPing
}

// methodLabel labels the requests metric: a known method by its name, any
// other "other", so that a client cannot grow the metric without bound. A
// switch, not a map: nothing of the front's is built at start.
func methodLabel(m *mcpwire.Message) string {
	if m.Kind == mcpwire.KindResponse {
		return "response"
	}
	switch m.Method {
	case "initialize", "ping", "server/discover", "tools/list", "tools/call",
		"prompts/list", "prompts/get", "resources/list", "resources/read",
		"resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"completion/complete", "logging/setLevel", "subscriptions/listen",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed":
		return m.Method
	}
	return "other"
}

// rpcError answers with a JSON-RPC error of the front's (id nil: null).
func rpcError(w http.ResponseWriter, status int, id []byte, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorMessage(id, code, message))
}

// errorMessage is a JSON-RPC error response.
func errorMessage(id []byte, code int, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	e, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message})
	out := make([]byte, 0, 48+len(id)+len(e))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"error":`...)
	out = append(out, e...)
	return append(out, '}')
}

// logWriter logs each line a relay writes to its stderr (the upstream's
// stderr and the report of a block, escaped by the relay: logged as
// textsafe.Escaped, so that an escaping logger does not escape it again).
type logWriter struct {
	log *slog.Logger
	who string
	mu  sync.Mutex
	buf []byte
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.log.Info("relay", "session", l.who, "line", textsafe.Escaped(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 { // a line without end: logged in pieces
		l.log.Info("relay", "session", l.who, "line", textsafe.Escaped(l.buf))
		l.buf = nil
	}
	return len(p), nil
}

func escapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = textsafe.Escape(s)
	}
	return out
}
