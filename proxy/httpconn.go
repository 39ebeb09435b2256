package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
)

// The Streamable HTTP upstream (docs/PROXY.md, "Remote servers"): every
// message the relay sends is POSTed to the endpoint, and every message in
// the answers (a JSON body or an event stream) and on the GET stream is
// read through mcpwire and handed to the relay as one line, exactly the
// bytes the relay then checks and forwards. go-sdk's client transport is not
// used here: it opens the GET stream only under its own client session,
// resumes broken streams (which the proxy must refuse: it did not see them
// from the start), and re-encodes every message, so that the client would
// not receive the bytes that were checked.

// Header names of the Streamable HTTP transport.
const (
	hdrSession  = "Mcp-Session-Id"
	hdrVersion  = "Mcp-Protocol-Version"
	hdrMethod   = "Mcp-Method"
	hdrName     = "Mcp-Name"
	maxErrBody  = 4 << 10 // bytes of an error answer's body read (and dropped)
	getRetryMin = 500 * time.Millisecond
	getRetryMax = 30 * time.Second
	getRetries  = 5
)

// httpConn is one session with a Streamable HTTP endpoint.
type httpConn struct {
	endpoint string
	origin   string
	client   *http.Client
	header   http.Header
	max      int
	grace    time.Duration // for the DELETE when the client left
	wait     time.Duration // for the answer to a notification or a response
	stderr   io.Writer
	// The GET stream's first and longest delay before it is opened again
	// (getRetryMin, getRetryMax; shorter in tests).
	getMin, getMax time.Duration

	ctx    context.Context // of every request; cancelled by Stop
	cancel context.CancelFunc
	msgs   chan []byte // lines for the relay (Receive)
	// workers run the requests' POSTs (goCall).
	workers *callWorkers
	// push is the relay's handler of each message (receiveTo), called by
	// the goroutine that read it, one call at a time (pushMu), in place of
	// Receive; pushing is set once it is; pushEnded once it was given the
	// session's end.
	push      func(line []byte, err error)
	pushMu    sync.Mutex
	pushing   atomic.Bool
	pushEnded bool
	ended     chan struct{} // closed by end
	endMu     sync.Mutex
	endErr    error // io.EOF when the session ended cleanly
	// clientLeft is set when the client left, before the session's
	// DELETE is sent: a 404 after it is that deletion (end).
	clientLeft atomic.Bool
	wg         sync.WaitGroup

	mu sync.Mutex
	// calls stop the POST of each request in flight, by its raw id: a
	// request the client cancelled is no longer read once the server
	// accepted the cancellation (abandon).
	calls     map[string]context.CancelFunc
	sessions  mcpwire.SessionIDs // Mcp-Session-Id, once the server gave one
	version   string             // negotiated by initialize, for the header
	modern    string             // the last version a request's _meta asked for (2026-07-28 and later)
	getOnce   sync.Once
	closeOnce sync.Once
}

// HTTPOptions configure an [HTTPUpstream].
type HTTPOptions struct {
	// Client makes the requests (nil: http.DefaultClient); its Transport
	// may add credentials (OAuth). Redirects are followed as
	// mcpwire.CheckRedirect says, whatever its CheckRedirect says.
	Client *http.Client
	// Header is added to every request (credentials, say).
	Header http.Header
	// AllowInsecureHTTP lets the URL be plain http:// to a host that is
	// not a loopback one, when Header is empty (netguard.CheckServerURL);
	// OAuth refuses it by itself (oauth.New).
	AllowInsecureHTTP bool
}

// HTTPUpstream is a remote server's Streamable HTTP endpoint: the proxy is
// then a bridge from the client's stdio to the server's HTTP, with the
// same checks (docs/PROXY.md, "Remote servers"). The URL must pass CheckURL
// and the header mcpwire.CheckHeaders; a session sends nothing before the
// client's first message. An error of the session is a *ConnectError.
func HTTPUpstream(endpoint string, o HTTPOptions) (Upstream, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	if err := CheckURL(u, netguard.URLRule{AllowInsecureHTTP: o.AllowInsecureHTTP, Credentials: len(o.Header) > 0}); err != nil {
		return nil, err
	}
	if err := mcpwire.CheckHeaders(o.Header); err != nil {
		return nil, err
	}
	base := o.Client
	if base == nil {
		base = http.DefaultClient
	}
	client := *base
	// A redirect is followed only where every official client would follow
	// it to the same place, within the origin (mcpwire.CheckRedirect):
	// elsewhere the headers (credentials) would go where the user did not
	// send them.
	client.CheckRedirect = mcpwire.CheckRedirect
	return &httpUpstream{endpoint: u, client: &client, header: o.Header}, nil
}

// httpUpstream is what HTTPUpstream returns: each Connect is a new session.
type httpUpstream struct {
	endpoint *url.URL
	client   *http.Client
	header   http.Header
}

// Connect prepares a session with the endpoint.
func (h *httpUpstream) Connect(_ context.Context, env UpstreamEnv) (UpstreamConn, error) {
	return h.session(env), nil
}

func (h *httpUpstream) session(env UpstreamEnv) *httpConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpConn{
		endpoint: h.endpoint.String(),
		origin:   originOf(h.endpoint),
		client:   h.client,
		header:   h.header,
		max:      env.MaxMessageBytes,
		grace:    env.Grace,
		wait:     env.Timeout,
		stderr:   env.Stderr,
		getMin:   getRetryMin,
		getMax:   getRetryMax,
		ctx:      ctx,
		cancel:   cancel,
		workers:  newCallWorkers(ctx),
		msgs:     make(chan []byte),
		ended:    make(chan struct{}),
	}
}

// redacted is the endpoint as messages show it: no user info or query,
// which may carry a credential (netguard.ShownURL).
func (u *httpConn) redacted() string {
	p, err := url.Parse(u.endpoint)
	if err != nil {
		return u.origin
	}
	return netguard.ShownURL(p)
}

// Send sends one message of the relay's (one line). A request is POSTed
// and its answer read on a goroutine of its own, once the server's answer
// headers arrived for the initialize (which may set the session); a
// notification or a response is POSTed before Send returns, so that what
// follows it reaches the server after it, and counts as sent only once
// the server accepted it (a 2xx status).
//
// A blank line is nothing to send (as a stdio server reads it). A line
// that is not strict JSON-RPC is not sent, and Send does not count it as
// sent: the relay checks every client message with the same reader
// before it gets here (and drops, with a notice, one that is not strict
// JSON-RPC), so such a line means the relay's idea of the session is no
// longer the server's, and the session ends with a *ConnectError that says
// so. A message that could not be POSTed, or that the server did not
// accept, ends the session too; either way Send returns the session's end
// as its error (docs/PROXY.md, "Remote servers").
func (u *httpConn) Send(line []byte) error {
	body := bytes.TrimSpace(mcpwire.Content(line))
	if len(body) == 0 {
		return nil
	}
	select {
	case <-u.ended:
		return errors.New("the session with the server has ended")
	default:
	}
	m, err := mcpwire.Parse(body)
	if err != nil {
		return u.fail(&ConnectError{URL: u.redacted(), Err: err,
			What: "a message for the server at " + u.redacted() + " is not strict JSON-RPC and was not sent",
			Hint: "the proxy checks every message before it sends it: report this as a bug of mcpsign"})
	}
	body = bytes.Clone(body)
	switch {
	case m.Kind == mcpwire.KindRequest && m.Method == mcpwire.MethodInitialize:
		resp, err := u.post(body, &m)
		if err != nil {
			return u.fail(err)
		}
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.answer(resp, &m, body)
		}()
	case m.Kind == mcpwire.KindRequest:
		u.goCall(body, m)
	default:
		// Bounded: what follows waits for it (the server gets messages in
		// order), so a server that never answers must not hold the session.
		timer := time.AfterFunc(u.wait, func() {
			u.end(&ConnectError{URL: u.redacted(), What: "the server at " + u.redacted() + " did not accept a " + messageWhat(&m) + " within " + u.wait.String(),
				Hint: "check the server"})
			u.cancel()
		})
		defer timer.Stop()
		resp, err := u.post(body, &m)
		if err != nil {
			return u.fail(err)
		}
		if err := u.accepted(resp, &m); err != nil {
			return err
		}
		if m.Kind == mcpwire.KindNotification && m.Method == mcpwire.MethodCancelled {
			u.abandon(cancelledID(m.Params))
		}
	}
	return nil
}

// goCall POSTs a request on a goroutine of its own (callWorkers: one that
// finished a call may take the next), under a context of its own, so that
// a call the client cancelled and the server accepted the cancellation of
// (abandon) lets go of its answer stream: it is then answered once (the
// relay answered it; answerCancelled ends its id).
func (u *httpConn) goCall(body []byte, m mcpwire.Message) {
	ctx, stop := context.WithCancel(u.ctx)
	id := string(m.ID)
	u.mu.Lock()
	if u.calls == nil {
		u.calls = map[string]context.CancelFunc{}
	}
	u.calls[id] = stop
	u.mu.Unlock()
	u.wg.Add(1)
	u.workers.run(func() {
		defer u.wg.Done()
		defer func() {
			u.mu.Lock()
			delete(u.calls, id)
			u.mu.Unlock()
			stop()
		}()
		// Abandoned: the client cancelled it, and the server
		// accepted the cancellation, before it answered.
		abandoned := func() bool { return ctx.Err() != nil && u.ctx.Err() == nil }
		resp, err := u.postCtx(ctx, body, &m)
		if err != nil {
			if abandoned() {
				u.answerCancelled(m.ID)
				return
			}
			u.end(err)
			return
		}
		if u.answer(resp, &m, body) && abandoned() {
			u.answerCancelled(m.ID)
		}
	})
}

// answerCancelled hands the relay an answer for a request whose answer is
// no longer read (abandon), as by a server that answers a cancelled request
// (go-sdk's does): the relay answered the request when it sent the
// cancellation (cancel.go), and drops this late answer, which lets it
// forget the id (cancelledIDs) at once.
func (u *httpConn) answerCancelled(id []byte) {
	_ = u.deliverError(id, cancelledMessage)
}

// abandon stops reading the answer of the request id, once the server
// accepted its cancellation: a server need not answer a cancelled request
// (the TypeScript SDK's answers none, and keeps its event stream open
// until the session ends), and the client expects no answer, so its POST
// is closed rather than held for as long as the session (docs/PROXY.md,
// "Remote servers"). An answer that was on its way is dropped with it.
func (u *httpConn) abandon(id []byte) {
	if id == nil {
		return
	}
	u.mu.Lock()
	stop := u.calls[string(id)]
	u.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// request builds one HTTP request to the endpoint with the session's
// headers and the user's.
func (u *httpConn) request(method string, body []byte, m *mcpwire.Message) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(u.ctx, method, u.endpoint, rd)
	if err != nil {
		return nil, err
	}
	for name, values := range u.header {
		if textproto.CanonicalMIMEHeaderKey(name) == "Host" && len(values) > 0 {
			req.Host = values[0]
			continue
		}
		req.Header[textproto.CanonicalMIMEHeaderKey(name)] = values
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	u.mu.Lock()
	session, version := u.sessions.ID(), u.version
	if version == "" {
		version = u.modern
	}
	if m != nil && m.Kind == mcpwire.KindRequest {
		// A request says its own version in its _meta (2026-07-28); an
		// initialize without one goes without the header, as it does from
		// go-sdk: the version is what it negotiates.
		v, ok := mcpwire.MetaVersion(mcpwire.MetaOf(m.Params))
		switch {
		case ok:
			version = v
			if v >= mcpwire.ProtocolModern {
				u.modern = v
			}
		case m.Method == mcpwire.MethodInitialize:
			version = ""
		}
	}
	u.mu.Unlock()
	if version != "" {
		req.Header.Set(hdrVersion, version)
	}
	if session != "" {
		req.Header.Set(hdrSession, session)
	}
	if m != nil && m.Kind != mcpwire.KindResponse && version >= mcpwire.ProtocolModern {
		// The standard headers of the 2026-07-28 transport, which servers
		// check against the body.
		req.Header.Set(hdrMethod, m.Method)
		if name, ok := headerName(m); ok {
			req.Header.Set(hdrName, name)
		}
	}
	return req, nil
}

// headerName is the Mcp-Name of a request: the tool or prompt name, the
// resource URI, encoded as the transport asks when it is not plain
// printable ASCII.
func headerName(m *mcpwire.Message) (string, bool) {
	member := "name"
	switch m.Method {
	case "tools/call", "prompts/get":
	case "resources/read":
		member = "uri"
	default:
		return "", false
	}
	if len(m.Params) == 0 || m.Params[0] != '{' {
		return "", false
	}
	mm, err := digest.ReadMembers(m.Params, member)
	if err != nil {
		return "", false
	}
	v, ok := mm[member]
	if !ok || len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", false
	}
	plain := s == strings.TrimSpace(s)
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return s, true
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
}

// post sends one message and returns the answer once its headers arrived.
// The error is a *ConnectError (the server could not be used) or a
// protocol violation.
func (u *httpConn) post(body []byte, m *mcpwire.Message) (*http.Response, error) {
	return u.postCtx(u.ctx, body, m)
}

// postCtx is post under ctx (u.ctx or one derived from it).
func (u *httpConn) postCtx(ctx context.Context, body []byte, m *mcpwire.Message) (*http.Response, error) {
	req, err := u.request(http.MethodPost, body, m)
	if err != nil {
		return nil, err
	}
	req = req.WithContext(ctx)
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, u.transportError(err)
	}
	if err := u.checkHeaders(resp, m.Kind == mcpwire.KindRequest && m.Method == mcpwire.MethodInitialize); err != nil {
		drain(resp)
		return nil, err
	}
	return resp, nil
}

// checkHeaders reads the session of an answer and refuses the statuses
// that end the session: a redirect, 401, 403, and 404 of a session.
func (u *httpConn) checkHeaders(resp *http.Response, initialize bool) error {
	session := u.sessions.ID()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// mcpwire.ErrUnauthorized or ErrForbidden, by errors.Is.
		return &ConnectError{URL: u.redacted(), Status: resp.StatusCode,
			Err: &mcpwire.StatusError{Method: resp.Request.Method, Status: resp.StatusCode}, What: "the server at " + u.redacted()}
	case resp.StatusCode/100 == 3:
		return &ConnectError{URL: u.redacted(), Status: resp.StatusCode,
			What: fmt.Sprintf("the server at %s answered %s", u.redacted(), statusText(resp)),
			Hint: "give the final URL"}
	case resp.StatusCode == http.StatusNotFound && session != "":
		return &ConnectError{URL: u.redacted(), Status: resp.StatusCode,
			What: "the server at " + u.redacted() + " ended the session (404 Not Found)",
			Hint: "restart the host's connection to start a new one"}
	case resp.StatusCode == http.StatusNotFound && initialize:
		return &ConnectError{URL: u.redacted(), Status: resp.StatusCode,
			What: fmt.Sprintf("no MCP endpoint at %s (404 Not Found)", u.redacted()),
			Hint: "check the URL's path (often /mcp)"}
	case resp.StatusCode/100 != 2:
		return nil
	}
	return u.sessions.Check(resp.Header)
}

// accepted handles the answer to a notification or a response: a 2xx
// status (202 Accepted), or an error status, which ends the session with a
// *ConnectError: what was not accepted is not counted as sent. A body is
// not read: there is nothing in it for the client (as the TypeScript SDK,
// which reads none).
func (u *httpConn) accepted(resp *http.Response, m *mcpwire.Message) error {
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		// Not accepted: the server does not have it (a response it waits
		// for, a cancellation), so it does not count as sent.
		return u.fail(&ConnectError{URL: u.redacted(), Status: resp.StatusCode,
			What: "the server at " + u.redacted() + " did not accept a " + messageWhat(m) + " (" + statusText(resp) + ")",
			Hint: "check the server"})
	}
	if m.Kind == mcpwire.KindNotification && m.Method == mcpwire.MethodInitialized {
		u.startGET()
	}
	return nil
}
