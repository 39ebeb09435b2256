package front

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// streamBufferBytes is the read and write buffer of a connection that
// carries an upstream session's GET stream: it is open for as long as its
// client session, idle most of that time (a few server messages: a
// list_changed, a log line), and net/http's default of 4 KiB each way is
// most of an idle session's memory (docs/PERFORMANCE.md, "HTTP front").
const streamBufferBytes = 512

// upstreamTransport makes the requests of every relay to an HTTP
// upstream: GET streams on connections of their own (streamTrip), every
// other request (the POSTs, the DELETE) on post, with net/http's default
// buffers, where an answer's bytes go through at once.
type upstreamTransport struct {
	post, stream *http.Transport
}

// newUpstreamTransport returns the transport of the relays: t for the
// POSTs, and a clone of t with small buffers for the GET streams it
// leaves to net/http (through a proxy, or after a connection of their own
// failed).
func newUpstreamTransport(t *http.Transport) *upstreamTransport {
	s := t.Clone()
	s.ReadBufferSize = streamBufferBytes
	s.WriteBufferSize = streamBufferBytes
	return &upstreamTransport{post: t, stream: s}
}

func (u *upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return u.streamTrip(r)
	}
	return u.post.RoundTrip(r)
}

// CloseIdleConnections closes both transports' idle connections
// (http.Client.CloseIdleConnections calls it).
func (u *upstreamTransport) CloseIdleConnections() {
	u.post.CloseIdleConnections()
	u.stream.CloseIdleConnections()
}

// streamTrip sends a GET (an upstream session's stream of server
// messages, open for as long as its session) on an HTTP/1.1 connection of
// its own, which the caller's goroutine reads: net/http's transport holds
// two goroutines per connection (its read and write loops) besides the
// reader of the body, most of an idle session's stacks (docs/PERFORMANCE.md,
// "HTTP front"). The request and the response go through net/http's own
// wire code (Request.Write, ReadResponse); the connection is closed when
// the body is, or when the request's context ends. A GET through a proxy,
// or whose connection cannot be made so (a server that speaks only
// HTTP/2, say), goes through net/http's transport.
func (u *upstreamTransport) streamTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" || r.Body != nil && r.Body != http.NoBody {
		return u.stream.RoundTrip(r)
	}
	if u.stream.Proxy != nil {
		if p, err := u.stream.Proxy(r); err != nil || p != nil {
			return u.stream.RoundTrip(r)
		}
	}
	ctx := r.Context()
	conn, err := u.dial(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return u.stream.RoundTrip(r)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	bw := bufio.NewWriterSize(conn, streamBufferBytes)
	if err := r.Write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(conn, streamBufferBytes)
	for {
		resp, err := http.ReadResponse(br, r)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer: the answer follows
		}
		resp.Body = &streamBody{ReadCloser: resp.Body, conn: conn, stop: stop}
		return resp, nil
	}
}

// dial connects to r's host as the stream transport would (its dialer,
// its TLS configuration and handshake timeout), for HTTP/1.1 only.
func (u *upstreamTransport) dial(ctx context.Context, r *http.Request) (net.Conn, error) {
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
		if r.URL.Scheme == "https" {
			port = "443"
		}
	}
	addr := net.JoinHostPort(host, port)
	if r.URL.Scheme == "https" && u.stream.DialTLSContext != nil {
		return nil, errors.New("a TLS dialer of its own: left to net/http")
	}
	dial := u.stream.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil || r.URL.Scheme != "https" {
		return conn, err
	}
	cfg := &tls.Config{}
	if u.stream.TLSClientConfig != nil {
		cfg = u.stream.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(conn, cfg)
	hctx := ctx
	if d := u.stream.TLSHandshakeTimeout; d > 0 { // as net/http bounds its own
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// streamBody is the body of a GET stream on its own connection: closing it
// closes the connection.
type streamBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
	once sync.Once
}

func (b *streamBody) Close() error {
	b.once.Do(func() {
		b.stop()
		b.conn.Close()
	})
	return nil
}
