package source

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
)

// loadHTTP lists a Streamable HTTP server through go-sdk's client transport,
// with a wrapped http.RoundTripper that adds the user's headers (same origin
// only) and the negotiated protocol version header, and reads every
// response as docs/REMOTE.md, "Reading Streamable HTTP", says.
func loadHTTP(parent context.Context, endpoint string, o *Options) (*digest.Snapshot, error) {
	var own *http.Transport
	defer func() {
		if own != nil {
			// After stop: what was in flight then is cancelled (its
			// connection closed); what is idle is closed here.
			own.CloseIdleConnections()
		}
	}()
	ctx, abort, stop := withLimits(parent, o)
	defer stop()
	o.Progress(StageStart, 0)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, &StageError{Stage: StageStart, Err: fmt.Errorf("URL %s is not an http(s) URL with a host", netguard.ShownURL(u))}
	}
	if err := netguard.CheckServerURL(u, netguard.URLRule{AllowInsecureHTTP: o.AllowInsecureHTTP, Credentials: len(o.Headers) > 0}); err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	rt := &roundTripper{
		base:    http.DefaultTransport,
		origin:  originOf(u),
		headers: o.Headers,
		max:     o.MaxMessageBytes,
		abort:   abort,
		ctx:     ctx,
		url:     endpoint,
		changed: new(atomic.Bool),
	}
	client := &http.Client{Transport: rt}
	rt.client = client
	if b := o.HTTPClient; b != nil {
		if b.Transport != nil {
			rt.base = b.Transport
		}
		client.Jar, client.Timeout = b.Jar, b.Timeout
	}
	if t, ok := rt.base.(*http.Transport); ok {
		// Connections of this listing's own. The listings of one server
		// under each protocol version run at once (loadEras) and each
		// ends, cancelling what it still has in flight, on its own; on
		// one shared pool net/http could fail one listing's request
		// with "context canceled" while its own context was live (a
		// connection that another listing's cancellation closed),
		// which read as a server that cannot be reached.
		own = t.Clone()
		rt.base = own
	}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := mcpwire.CheckRedirect(req, via); err != nil {
			return rt.fail(err)
		}
		return nil
	}
	t := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: client,
		// No resumption: each answer must come in its own response.
		MaxRetries: -1,
		// Only answers to our own requests matter.
		DisableStandaloneSSE: true,
		// Beyond our own per-event cap (mcpwire.ReadResponse), so ours
		// reports first.
		MaxEventSize: eventLimit(o.MaxMessageBytes),
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	defer conn.Close() // ends the session (DELETE) if the server made one
	s := &session{w: &sdkWire{conn: conn}, o: o, httpRejects: true, negotiated: rt.setVersion, changed: rt.changed}
	snap, err := s.run(ctx)
	if err != nil {
		var se *StageError
		if errors.As(err, &se) && se.Stage == StageInitialize && unreachable(err) {
			se.Stage = StageStart
		}
		return nil, err
	}
	return snap, nil
}

// unreachable reports whether err means the server could not be reached
// at all (DNS, connect, TLS), rather than that it answered badly.
func unreachable(err error) bool {
	var ce *ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var op *net.OpError
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns) || errors.As(err, &cert) ||
		errors.As(err, &unknownAuthority) || errors.As(err, &hostname)
}

// eventLimit is the go-sdk SSE event cap: one message plus room for the
// field names and an id line.
func eventLimit(max int64) int {
	if max > math.MaxInt32 {
		return -1
	}
	return int(max) + 64<<10
}

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// roundTripper adds headers and reads every response strictly before
// go-sdk decodes it: the Mcp-Session-Id (mcpwire.SessionIDs), the status,
// the Content-Type (mcpwire.ReadContentType), and each response body to a
// POSTed request whole (mcpwire.ReadResponse): go-sdk gets the messages
// that passed, re-framed, and the answer only once the stream has ended
// cleanly. A violation aborts the listing with its cause.
type roundTripper struct {
	base    http.RoundTripper
	origin  string
	headers http.Header
	max     int64
	abort   context.CancelCauseFunc

	sessions mcpwire.SessionIDs
	// changed is the session's: set when a list_changed passes, on a POST
	// response (before or after the answer: go-sdk drops what follows it,
	// the TypeScript SDK does not) or the server's own stream.
	changed *atomic.Bool

	// The server's own stream (GET), opened as the official clients open
	// it once the session is initialized, so that what it pushes is read
	// as strictly as the answers (listen).
	ctx       context.Context // the listing's
	url       string
	client    *http.Client
	listening sync.Once

	mu      sync.Mutex
	version string // negotiated by the initialize handshake
}

func (rt *roundTripper) setVersion(v string) {
	rt.mu.Lock()
	rt.version = v
	rt.mu.Unlock()
}

// fail aborts the listing with err and returns it.
func (rt *roundTripper) fail(err error) error {
	rt.abort(err)
	return err
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if originOf(req.URL) == rt.origin {
		for name, values := range rt.headers {
			if textproto.CanonicalMIMEHeaderKey(name) == "Host" && len(values) > 0 {
				req.Host = values[0]
				continue
			}
			req.Header[textproto.CanonicalMIMEHeaderKey(name)] = values
		}
	}
	rt.mu.Lock()
	version := rt.version
	rt.mu.Unlock()
	// go-sdk sets the header itself from a request's _meta (2026-07-28) or
	// after its own handshake; ours is done by hand, so it is added here
	// (2025-06-18 and later require it on every request after initialize).
	if version != "" && req.Header.Get("Mcp-Protocol-Version") == "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	var check *mcpwire.StreamCheck
	initialized := false
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		// Only a request is answered; go-sdk reads no body of the
		// response to a notification or to an answer of ours.
		check, _ = mcpwire.NewPostCheck(body)
		if m, err := mcpwire.Parse(body); err == nil && m.Kind == mcpwire.KindNotification && m.Method == "notifications/initialized" {
			initialized = true
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if req.Method == http.MethodGet && req.Context().Value(listenKey{}) == nil {
		// Resuming a stream (go-sdk's only GET here, the standalone stream
		// being off) is refused: a POST response must hold its answer.
		return nil, rt.fail(fmt.Errorf("%w: a response stream to resume (mcpsign reads each answer from its own response)", ErrProtocol))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			return nil, rt.fail(connectError(req.URL, err))
		}
		return nil, err
	}
	if err := rt.sessions.Check(resp.Header); err != nil {
		resp.Body.Close()
		return nil, rt.fail(err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		resp.Body.Close()
		return nil, rt.fail(&mcpwire.StatusError{Method: req.Method, Status: resp.StatusCode})
	case resp.StatusCode/100 == 3:
		// The client follows it or not (mcpwire.CheckRedirect); its body is
		// never read as a message.
		resp.Body = mcpwire.LimitBody(resp.Body, 64<<10)
		return resp, nil
	case initialized && resp.StatusCode/100 == 2:
		rt.listening.Do(func() { go rt.listen() })
		resp.Body = mcpwire.LimitBody(resp.Body, rt.max)
		return resp, nil
	case req.Context().Value(listenKey{}) != nil:
		return resp, nil // listen reads it
	case resp.StatusCode/100 != 2 || check == nil:
		// A rejection (go-sdk reports the status, and at most a JSON-RPC
		// error from the body, never a message it acts on), or the answer
		// to a notification or response, whose body go-sdk does not read.
		resp.Body = mcpwire.LimitBody(resp.Body, rt.max)
		return resp, nil
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, rt.fail(fmt.Errorf("%w: status %d to a request (want 200 with its answer)", ErrProtocol, resp.StatusCode))
	}
	kind, err := mcpwire.ReadContentType(resp.Header)
	if err != nil {
		resp.Body.Close()
		return nil, rt.fail(err)
	}
	pr, pw := io.Pipe()
	body := resp.Body
	resp.Body = pr
	resp.ContentLength = -1
	go rt.read(req.Context(), kind, body, check, pw)
	return resp, nil
}

// listenKey marks the context of listen's GET request.
type listenKey struct{}

// listen opens the server's own stream (GET), as the TypeScript SDK and
// go-sdk clients do once the session is initialized, and reads it until
// the listing ends: requests and notifications may come there, an answer
// may not (nothing is pending on it: mcpwire.NewGetCheck). A server that
// pushes an answer there, where a client would take it for the answer to
// a pending request, is refused. Both clients read a stream of any 2xx
// status, and open it again whenever it ends, resuming after the last id
// it carried (Last-Event-ID, mcpwire.EventReader.LastID); so does listen,
// at once (a client waits the server's retry, which may be 0), until the
// listing ends; a stream that ends more than maxListenStreams times is
// refused. A server without the stream (405) or that refuses it is left
// alone, as the clients do; a reopening it refuses is tried again twice,
// as the TypeScript SDK does (docs/REMOTE.md, "Reading Streamable HTTP").
func (rt *roundTripper) listen() {
	ctx := context.WithValue(rt.ctx, listenKey{}, true)
	lastID := ""
	refused := 0
	for opened := 0; ctx.Err() == nil; {
		if opened >= maxListenStreams {
			rt.abort(fmt.Errorf("%w: the server's own stream ended %d times during the listing", ErrProtocol, opened))
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if id := rt.sessions.ID(); id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := rt.client.Do(req)
		if err != nil {
			return // a refused redirect or connection aborted the listing already
		}
		if resp.StatusCode/100 != 2 {
			resp.Body.Close()
			if refused++; opened == 0 || resp.StatusCode == http.StatusMethodNotAllowed || refused > 2 {
				return
			}
			continue
		}
		refused = 0
		opened++
		kind, err := mcpwire.ReadContentType(resp.Header)
		if err == nil && kind != mcpwire.BodyEventStream {
			err = fmt.Errorf("%w: %w: the server's own stream is not text/event-stream", ErrProtocol, mcpwire.ErrContentType)
		}
		if err == nil {
			lastID, err = rt.readStream(resp.Body)
		}
		resp.Body.Close()
		if err != nil {
			if ctx.Err() == nil {
				rt.abort(fmt.Errorf("the server's own stream: %w", err))
			}
			return
		}
	}
}

// maxListenStreams bounds how many times listen opens the server's own
// stream in one listing.
const maxListenStreams = 1000

// readStream reads one GET stream strictly to its end and returns the id
// a client would resume it after. What the server says there is only
// checked: mcpsign lists.
func (rt *roundTripper) readStream(body io.Reader) (string, error) {
	maxMsg := int(min(rt.max, math.MaxInt32-mcpwire.EventOverhead))
	er := mcpwire.NewEventReader(body, maxMsg+mcpwire.EventOverhead)
	check := mcpwire.NewGetCheck()
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			return er.LastID(), nil
		}
		if err != nil {
			return "", err
		}
		if len(ev.Data) > maxMsg {
			return "", fmt.Errorf("%w: a message has more than %d bytes", mcpwire.ErrMessageTooLarge, maxMsg)
		}
		if _, err := check.Message(ev.Data); err != nil {
			return "", err
		}
		rt.noteChange(ev.Data)
	}
}

// noteChange marks the listing changed when msg is a list_changed.
func (rt *roundTripper) noteChange(msg []byte) {
	if m, err := mcpwire.Parse(msg); err == nil && m.Kind == mcpwire.KindNotification && mcpwire.IsListChanged(m.Method) {
		rt.changed.Store(true)
	}
}

// read reads one response body strictly and writes what passed to w for
// go-sdk: each message as one event (or the JSON answer as it is).
func (rt *roundTripper) read(ctx context.Context, kind mcpwire.BodyKind, body io.ReadCloser, check *mcpwire.StreamCheck, w *io.PipeWriter) {
	// A write blocked on a reader that is gone ends with the request.
	defer context.AfterFunc(ctx, func() { w.CloseWithError(context.Cause(ctx)) })()
	write := func(msg []byte) error {
		rt.noteChange(msg)
		if kind == mcpwire.BodyJSON {
			_, err := w.Write(msg)
			return err
		}
		_, err := w.Write(eventOf(msg))
		return err
	}
	held, err := mcpwire.ReadResponse(ctx, kind, body, check, mcpwire.ResponseOptions{
		MaxMessageBytes: int(min(rt.max, math.MaxInt32)),
		MaxBodyBytes:    max(mcpwire.DefaultMaxBodyBytes, 2*rt.max+mcpwire.EventOverhead),
	}, write)
	for _, msg := range held {
		rt.noteChange(msg) // before the answer reaches the session
	}
	for _, msg := range held {
		if err != nil {
			break
		}
		err = write(msg)
	}
	if err != nil && !errors.Is(err, io.ErrClosedPipe) {
		rt.abort(err)
	}
	w.CloseWithError(err)
}

// eventOf frames one checked message as a server-sent event: a data line
// for each of its lines (a message split over data lines splits between
// JSON tokens).
func eventOf(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+16)
	for line := range bytes.SplitSeq(msg, []byte("\n")) {
		out = append(out, "data: "...)
		out = append(out, line...)
		out = append(out, '\n')
	}
	return append(out, '\n')
}

// connectError says what failed when a request did not reach the server.
func connectError(u *url.URL, err error) error {
	return &ConnectError{Host: u.Host, Err: err}
}

// sdkWire carries messages through go-sdk's Streamable HTTP transport,
// which frames them in request and response bodies. The bodies themselves
// are read strictly and whole before go-sdk decodes them (roundTripper,
// mcpwire.ReadResponse: every message parsed strictly, one answer per
// request with its id byte for byte, the answer handed on only once its
// stream ended cleanly), so that what go-sdk hands on is exactly what was
// checked; a message is then re-encoded from go-sdk's form for the session
// to read.
type sdkWire struct {
	conn mcp.Connection
}

func (w *sdkWire) send(ctx context.Context, msg []byte) error {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return err
	}
	return w.conn.Write(ctx, m)
}

func (w *sdkWire) recv(ctx context.Context) ([]byte, error) {
	m, err := w.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(r.Error, &we) {
			// A transport-made error (go-sdk's HTTP client reports a stream
			// that ended without the response this way).
			return nil, r.Error
		}
	}
	return jsonrpc.EncodeMessage(m)
}
