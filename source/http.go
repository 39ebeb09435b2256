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
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/mcpwire"
)

// reservedHeader reports whether a header (canonical name) is set by the
// Streamable HTTP transport itself.
func reservedHeader(canon string) bool {
	switch canon {
	case "Content-Type", "Content-Length", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version",
		"Last-Event-Id", "Transfer-Encoding", "Connection":
		return true
	}
	return false
}

// ParseHeaders reads repeatable "Name: value" arguments (as given to
// --header) into an http.Header. Errors name the header, never its value.
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for i, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("header #%d: want \"Name: value\"", i+1)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	if err := validateHeaders(h); err != nil {
		return nil, err
	}
	return h, nil
}

func validateHeaders(h http.Header) error {
	for name, values := range h {
		if !validHeaderName(name) {
			return fmt.Errorf("header name %q is not a valid HTTP header name", name)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if reservedHeader(canon) {
			return fmt.Errorf("header %s is set by the MCP transport and cannot be given", canon)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header %s: the value holds a line break or NUL", canon)
			}
		}
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// loadHTTP lists a Streamable HTTP server through go-sdk's client transport,
// with a wrapped http.RoundTripper that adds the user's headers (same origin
// only), the negotiated protocol version header, and the message size cap.
func loadHTTP(parent context.Context, endpoint string, o *Options) (*digest.Snapshot, error) {
	ctx, abort, stop := withLimits(parent, o)
	defer stop()
	o.Progress(StageStart, 0)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, &StageError{Stage: StageStart, Err: fmt.Errorf("URL %s is not an http(s) URL with a host", u.Redacted())}
	}
	rt := &roundTripper{
		base:    http.DefaultTransport,
		origin:  originOf(u),
		headers: o.Headers,
		max:     o.MaxMessageBytes,
		abort:   abort,
	}
	client := &http.Client{Transport: rt}
	if b := o.HTTPClient; b != nil {
		if b.Transport != nil {
			rt.base = b.Transport
		}
		client.Jar, client.Timeout = b.Jar, b.Timeout
	}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if originOf(req.URL) != rt.origin {
			return fmt.Errorf("redirect to another origin (%s) refused: headers go to %s only", originOf(req.URL), rt.origin)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	t := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: client,
		// Resume an interrupted response stream a couple of times; the
		// listing timeout bounds it anyway.
		MaxRetries: 2,
		// Only answers to our own requests matter.
		DisableStandaloneSSE: true,
		// Beyond our own per-event cap (sseCap), so ours reports first.
		MaxEventSize: eventLimit(o.MaxMessageBytes),
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	defer conn.Close() // ends the session (DELETE) if the server made one
	s := &session{w: &sdkWire{conn: conn}, o: o, httpRejects: true, negotiated: rt.setVersion}
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

// roundTripper adds headers, caps response bodies, and reads every
// message in them strictly (mcpwire.HTTPBodies) before go-sdk decodes it.
type roundTripper struct {
	base    http.RoundTripper
	origin  string
	headers http.Header
	max     int64
	abort   context.CancelCauseFunc

	ids mcpwire.HTTPBodies // requests in flight: every response body is read strictly against them

	mu      sync.Mutex
	version string // negotiated by the initialize handshake
}

func (rt *roundTripper) setVersion(v string) {
	rt.mu.Lock()
	rt.version = v
	rt.mu.Unlock()
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
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		rt.ids.Sent(body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tooLarge := func() error {
		err := fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, rt.max)
		rt.abort(err)
		return err
	}
	violation := func(err error) error {
		rt.abort(err)
		return err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 {
		mt = "" // a rejection: go-sdk reports the status and reads no message
	}
	switch mt {
	case "text/event-stream":
		resp.Body = rt.ids.SSE(&sseCap{body: resp.Body, max: rt.max + 16<<10, tooLarge: tooLarge}, violation)
	case "application/json":
		resp.Body = rt.ids.JSON(&bodyCap{body: resp.Body, left: rt.max, tooLarge: tooLarge}, violation)
	default:
		resp.Body = &bodyCap{body: resp.Body, left: rt.max, tooLarge: tooLarge}
	}
	return resp, nil
}

// bodyCap caps a response body that holds one message.
type bodyCap struct {
	body     io.ReadCloser
	left     int64
	tooLarge func() error
	err      error
}

func (b *bodyCap) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.err = b.tooLarge()
		return 0, b.err
	}
	return n, err
}

func (b *bodyCap) Close() error { return b.body.Close() }

// sseCap caps each event of a server-sent event stream (the bytes between
// blank lines), that is each message with its few field names.
type sseCap struct {
	body     io.ReadCloser
	max      int64
	tooLarge func() error
	event    int64 // bytes of the current event so far
	lineLen  int   // bytes of the current line, without line ends
	err      error
}

func (s *sseCap) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.body.Read(p)
	rest := p[:n]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line = rest[:i]
		}
		// \r is part of a line end; a lone \r line end (rare) is counted
		// as if the event went on, which only errs on the strict side.
		s.lineLen += len(line) - countCR(line)
		s.event += int64(len(line))
		if i >= 0 {
			s.event++
		}
		if s.event > s.max {
			s.err = s.tooLarge()
			return 0, s.err
		}
		if i < 0 {
			break
		}
		if s.lineLen == 0 {
			s.event = 0 // a blank line ends the event
		}
		s.lineLen = 0
		rest = rest[i+1:]
	}
	return n, err
}

// countCR counts the carriage returns in b.
func countCR(b []byte) int {
	n := 0
	for i := bytes.IndexByte(b, '\r'); i >= 0; i = bytes.IndexByte(b, '\r') {
		n++
		b = b[i+1:]
	}
	return n
}

func (s *sseCap) Close() error { return s.body.Close() }

// sdkWire carries messages through go-sdk's Streamable HTTP transport,
// which frames them in request and response bodies. The bodies themselves
// are read strictly before go-sdk decodes them (roundTripper: every
// message is checked with mcpwire.Parse, and every response must carry the
// id of a request in flight byte for byte), so that what go-sdk hands on
// is exactly what was sent; a message is then re-encoded from go-sdk's form
// for the session to read.
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
