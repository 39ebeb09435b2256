package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/mcpwire"
)

// The Streamable HTTP upstream (docs/PROXY.md, "Remote servers"): every
// message the relay writes is POSTed to the endpoint, and every message in
// the answers (a JSON body or an event stream) and on the GET stream is
// read through mcpwire and handed to the relay as one line, exactly the
// bytes the relay then checks and forwards. go-sdk's client transport is not
// used here: it opens the GET stream only under its own client session,
// resumes broken streams (which the proxy must refuse: it did not see them
// from the start), and re-encodes every message, so that the client would
// not receive the bytes that were checked.

// ConnectError is what Run returns when the remote server could not be
// used at all, or the session with it could not go on: it could not be
// reached, TLS failed, it asks for credentials or refuses them, redirects,
// no longer knows the session, did not accept a message in time, or a
// message for it could not be sent.
// Its message is one line that names what failed and what to do.
type ConnectError struct {
	// URL is the endpoint as shown: no user info or query (netguard.ShownURL).
	URL string
	// Status is the HTTP status when the server answered (0 otherwise).
	Status int
	// What says what failed, Hint what to do; Err is the cause, if any.
	What, Hint string
	Err        error
}

func (e *ConnectError) Error() string {
	msg := e.What
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *ConnectError) Unwrap() error { return e.Err }

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

// httpUpstream is the relay's server when it is a Streamable HTTP endpoint.
type httpUpstream struct {
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

	ctx    context.Context // of every request; cancelled by stop
	cancel context.CancelFunc
	msgs   chan []byte   // lines for the relay
	ended  chan struct{} // closed by end
	endMu  sync.Mutex
	endErr error // io.EOF when the session ended cleanly
	wg     sync.WaitGroup

	mu        sync.Mutex
	sessions  mcpwire.SessionIDs // Mcp-Session-Id, once the server gave one
	version   string             // negotiated by initialize, for the header
	modern    string             // the last version a request's _meta asked for (2026-07-28 and later)
	getOnce   sync.Once
	closeOnce sync.Once
}

// newHTTPUpstream prepares the session with endpoint; nothing is sent
// before the relay writes the client's first message.
func newHTTPUpstream(o *Options) (*httpUpstream, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	if err := CheckURL(u, netguard.URLRule{AllowInsecureHTTP: o.AllowInsecureHTTP, Credentials: len(o.Header) > 0}); err != nil {
		return nil, err
	}
	if err := mcpwire.CheckHeaders(o.Header); err != nil {
		return nil, err
	}
	base := o.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	client := *base
	origin := originOf(u)
	// A redirect is followed only where every official client would follow
	// it to the same place, within the origin (mcpwire.CheckRedirect):
	// elsewhere the headers (credentials) would go where the user did not
	// send them.
	client.CheckRedirect = mcpwire.CheckRedirect
	ctx, cancel := context.WithCancel(context.Background())
	return &httpUpstream{
		endpoint: u.String(),
		origin:   origin,
		client:   &client,
		header:   o.Header,
		max:      o.MaxMessageBytes,
		grace:    o.ShutdownGrace,
		wait:     o.CheckTimeout,
		stderr:   o.Stderr,
		getMin:   getRetryMin,
		getMax:   getRetryMax,
		ctx:      ctx,
		cancel:   cancel,
		msgs:     make(chan []byte),
		ended:    make(chan struct{}),
	}, nil
}

// ErrInsecureURL is the error of an http:// URL whose host is not a
// loopback address (netguard.ErrInsecureURL, the one rule).
var ErrInsecureURL = netguard.ErrInsecureURL

// CheckURL checks a remote server's URL as every command does
// (netguard.CheckServerURL): https, or http to a loopback host, or, under
// r, plain http elsewhere without credentials; a host; no fragment.
func CheckURL(u *url.URL, r netguard.URLRule) error { return netguard.CheckServerURL(u, r) }

// originOf is the scheme and host of u, lowercased.
func originOf(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// redacted is the endpoint as messages show it: no user info or query,
// which may carry a credential (netguard.ShownURL).
func (u *httpUpstream) redacted() string {
	p, err := url.Parse(u.endpoint)
	if err != nil {
		return u.origin
	}
	return netguard.ShownURL(p)
}

func (u *httpUpstream) input() io.Writer { return upstreamWriter{u} }

type upstreamWriter struct{ u *httpUpstream }

// Write sends one message of the relay's (one line). A request is POSTed
// and its answer read on a goroutine of its own, once the server's answer
// headers arrived for the initialize (which may set the session); a
// notification or a response is POSTed before Write returns, so that what
// follows it reaches the server after it.
//
// A blank line is nothing to send (as a stdio server reads it). A line
// that is not strict JSON-RPC is not sent, and Write does not count it as
// written: the relay checks every client message with the same reader
// before it gets here (and drops, with a notice, one that is not strict
// JSON-RPC), so such a line means the relay's idea of the session is no
// longer the server's, and the session ends with a *ConnectError that says
// so. A message that could not be POSTed ends the session too; either
// way Write returns the session's end as its error (docs/PROXY.md,
// "Remote servers").
func (w upstreamWriter) Write(line []byte) (int, error) {
	u := w.u
	body := bytes.TrimSpace(mcpwire.Content(line))
	if len(body) == 0 {
		return len(line), nil
	}
	select {
	case <-u.ended:
		return 0, errors.New("the session with the server has ended")
	default:
	}
	m, err := mcpwire.Parse(body)
	if err != nil {
		return 0, u.fail(&ConnectError{URL: u.redacted(), Err: err,
			What: "a message for the server at " + u.redacted() + " is not strict JSON-RPC and was not sent",
			Hint: "the proxy checks every message before it sends it: report this as a bug of mcpsign"})
	}
	body = bytes.Clone(body)
	switch {
	case m.Kind == mcpwire.KindRequest && m.Method == mcpwire.MethodInitialize:
		resp, err := u.post(body, &m)
		if err != nil {
			return 0, u.fail(err)
		}
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.answer(resp, &m, body)
		}()
	case m.Kind == mcpwire.KindRequest:
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			resp, err := u.post(body, &m)
			if err != nil {
				u.end(err)
				return
			}
			u.answer(resp, &m, body)
		}()
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
			return 0, u.fail(err)
		}
		u.accepted(resp, &m)
	}
	return len(line), nil
}

// request builds one HTTP request to the endpoint with the session's
// headers and the user's.
func (u *httpUpstream) request(method string, body []byte, m *mcpwire.Message) (*http.Request, error) {
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
func (u *httpUpstream) post(body []byte, m *mcpwire.Message) (*http.Response, error) {
	req, err := u.request(http.MethodPost, body, m)
	if err != nil {
		return nil, err
	}
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
func (u *httpUpstream) checkHeaders(resp *http.Response, initialize bool) error {
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

// transportError names why the server could not be reached.
func (u *httpUpstream) transportError(err error) error {
	if u.ctx.Err() != nil {
		return io.EOF // stopped
	}
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, mcpwire.ErrRedirect):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "the server at " + u.redacted() + " redirects",
			Hint: "a redirect is followed within the server's origin only, and for a POST only with 307 or 308: give the final URL"}
	case errors.As(err, &cert) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &rec):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "TLS with " + u.origin + " failed",
			Hint: "the server's certificate is not trusted for this host name: check the URL, or the system's certificate store"}
	case errors.As(err, &dns):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "cannot resolve the server's host " + u.origin,
			Hint: "check the URL and the network"}
	case errors.As(err, &op) && op.Op == "dial":
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "cannot connect to " + u.redacted(),
			Hint: "is the server running, and is the URL right?"}
	}
	return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
		What: "the request to " + u.redacted() + " failed",
		Hint: "check the server and the network"}
}

// unwrapURL drops the *url.Error around err, whose message repeats the
// URL unredacted.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// accepted handles the answer to a notification or a response: 202, or
// an error status said on stderr. A body is not read: there is nothing in
// it for the client (as the TypeScript SDK, which reads none).
func (u *httpUpstream) accepted(resp *http.Response, m *mcpwire.Message) {
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(u.stderr, "mcpsign proxy: the server answered %s to a %s\n", textsafe.Escape(statusText(resp)), textsafe.Escape(messageWhat(m)))
		return
	}
	if m.Kind == mcpwire.KindNotification && m.Method == mcpwire.MethodInitialized {
		u.startGET()
	}
}

func messageWhat(m *mcpwire.Message) string {
	if m.Kind == mcpwire.KindResponse {
		return "response"
	}
	return textsafe.Cut(m.Method, 100) + " notification"
}

func statusText(resp *http.Response) string {
	return textsafe.Cut(resp.Status, 100)
}

// answer reads the answer to the request m: a JSON body or an event
// stream, read through mcpwire, whose messages go to the relay. An error
// status becomes an error answer of the proxy's, so that the request gets
// its one answer; an answer that breaks the transport ends the session
// with a protocol violation.
func (u *httpUpstream) answer(resp *http.Response, m *mcpwire.Message, body []byte) {
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		u.end(fmt.Errorf("%w: the server accepted the request %s (202) without answering it", mcpwire.ErrProtocol, textsafe.Cut(m.Method, 100)))
	case resp.StatusCode/100 != 2:
		// A JSON-RPC error answer in the body (an unsupported protocol
		// version, say: clients fall back on its code) is passed on when it
		// reads strictly as the answer; else the proxy answers.
		if !u.errorBody(resp, body) {
			u.deliverError(m.ID, "mcpsign proxy: the server answered "+statusText(resp))
		}
	default:
		if err := u.readAnswer(resp, body, m); err != nil && err != errIgnore {
			u.end(err)
		}
	}
}

// deliver hands one message to the relay as one line.
func (u *httpUpstream) deliver(msg []byte) error {
	line, err := asLine(msg)
	if err != nil {
		return err
	}
	select {
	case u.msgs <- line:
		return nil
	case <-u.ended:
		return io.EOF
	}
}

// asLine makes a message one line for the relay: the transport allows
// white space between a message's tokens, even line breaks, which a stdio
// client would read as two messages; it is removed (only white space
// outside strings: the message means the same, and the relay checks these
// bytes, which are the ones the client receives).
func asLine(msg []byte) ([]byte, error) {
	msg = bytes.TrimSpace(msg)
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return nil, fmt.Errorf("%w: a message is not JSON: %w", mcpwire.ErrProtocol, err)
		}
		msg = b.Bytes()
	}
	line := make([]byte, 0, len(msg)+1)
	line = append(line, msg...)
	return append(line, '\n'), nil
}

// deliverError answers the request id with an error of the proxy's.
func (u *httpUpstream) deliverError(id []byte, message string) {
	e, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{-32603, message})
	msg := make([]byte, 0, 48+len(id)+len(e))
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, id...)
	msg = append(msg, `,"error":`...)
	msg = append(msg, e...)
	msg = append(msg, '}')
	u.deliver(msg)
}

// startGET opens the GET stream of server-initiated messages once, after
// the client's initialized was accepted (protocols before 2026-07-28,
// which have it).
func (u *httpUpstream) startGET() {
	u.mu.Lock()
	modern := u.version == "" || u.version >= mcpwire.ProtocolModern
	u.mu.Unlock()
	if modern {
		return // 2026-07-28 has no GET stream
	}
	u.getOnce.Do(func() {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.getLoop()
		}()
	})
}

// getLoop reads the GET stream, and opens it again (never resumed: a
// stream is read from its start or not at all) when it ends. When it
// could not be opened, or ended without a message, getRetries times in a
// row, it is given up, and stderr says so: the server's own requests and
// notifications no longer arrive, while the client's requests go on.
func (u *httpUpstream) getLoop() {
	delay := u.getMin
	failures := 0
	defer func() {
		select {
		case <-u.ended:
			return // nobody reads any more
		default:
		}
		if failures >= getRetries && u.ctx.Err() == nil {
			fmt.Fprintf(u.stderr, "mcpsign proxy: the GET stream of %s could not be opened, or ended without a message, %d times in a row: given up, the server's own requests and notifications (a list_changed, say) no longer reach the client\n", textsafe.Escape(u.redacted()), getRetries)
		}
	}()
	for failures < getRetries {
		req, err := u.request(http.MethodGet, nil, nil)
		if err != nil {
			u.end(err)
			return
		}
		resp, err := u.client.Do(req)
		if err != nil {
			if u.ctx.Err() != nil {
				return
			}
			failures++
		} else {
			if err := u.checkHeaders(resp, false); err != nil {
				drain(resp)
				u.end(err)
				return
			}
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode/100 != 2 || mt != "text/event-stream" {
				// 405: the server offers no stream (others answer 404 or a
				// body that is not a stream, which clients take so too).
				// Any other error status is a failure, and said: the
				// server's own messages will not arrive.
				if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
					fmt.Fprintf(u.stderr, "mcpsign proxy: the server answered %s to the GET stream of %s: not opened, the server's own requests and notifications (a list_changed, say) will not reach the client\n",
						textsafe.Escape(statusText(resp)), textsafe.Escape(u.redacted()))
				}
				drain(resp)
				return
			}
			n, err := u.readStream(resp)
			drain(resp)
			if err != nil {
				u.end(err)
				return
			}
			if n > 0 {
				failures, delay = 0, u.getMin
			} else {
				failures++
			}
		}
		select {
		case <-u.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, u.getMax)
	}
}

// next hands the relay the server's next message.
func (u *httpUpstream) next() ([]byte, error) {
	select {
	case line := <-u.msgs:
		return line, nil
	case <-u.ended:
		return nil, u.endErr
	}
}

// end ends the session with err (io.EOF: cleanly); the first call wins.
func (u *httpUpstream) end(err error) {
	u.endMu.Lock()
	defer u.endMu.Unlock()
	select {
	case <-u.ended:
		return
	default:
	}
	if err == nil {
		err = io.EOF
	}
	u.endErr = err
	close(u.ended)
}

// fail ends the session with err, unless it ended already, and returns
// why it ended (the first end wins: a timeout that cancelled a POST, say,
// not the cancellation).
func (u *httpUpstream) fail(err error) error {
	u.end(err)
	u.endMu.Lock()
	defer u.endMu.Unlock()
	return u.endErr
}

// closeInput ends the session because the client left: the server is told
// (DELETE of the session), and the relay reads the end.
func (u *httpUpstream) closeInput() {
	u.sendDelete(u.grace)
	u.end(io.EOF)
}

// sendDelete ends the server's session, if it made one, once.
func (u *httpUpstream) sendDelete(grace time.Duration) {
	u.closeOnce.Do(func() {
		if u.sessions.ID() == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		req, err := u.request(http.MethodDelete, nil, nil)
		if err != nil {
			return
		}
		req = req.WithContext(ctx)
		if resp, err := u.client.Do(req); err == nil {
			drain(resp)
		}
	})
}

func (u *httpUpstream) stop(grace time.Duration) {
	u.end(io.EOF)
	u.sendDelete(grace)
	u.cancel()
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

func (u *httpUpstream) waitExit(d time.Duration) bool {
	select {
	case <-u.ended:
		return true
	case <-time.After(d):
		return false
	}
}

func (u *httpUpstream) exitedCleanly() bool {
	select {
	case <-u.ended:
		return errors.Is(u.endErr, io.EOF)
	default:
		return false
	}
}

func (u *httpUpstream) status() string {
	select {
	case <-u.ended:
	default:
		return "still running"
	}
	if errors.Is(u.endErr, io.EOF) {
		return "session ended"
	}
	return u.endErr.Error()
}

// drain reads a little of a body and closes it, so that the connection
// can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrBody))
	resp.Body.Close()
}
