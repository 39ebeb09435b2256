package front

import "net/http"

// streamBufferBytes is the read and write buffer of a connection that
// carries an upstream session's GET stream: it is open for as long as its
// client session, idle most of that time (a few server messages: a
// list_changed, a log line), and net/http's default of 4 KiB each way is
// most of an idle session's memory (docs/PERFORMANCE.md, "HTTP front").
const streamBufferBytes = 512

// upstreamTransport makes the requests of every relay to an HTTP
// upstream: GET streams on connections with small buffers (stream), every
// other request (the POSTs, the DELETE) on post, with net/http's default
// buffers, where an answer's bytes go through at once.
type upstreamTransport struct {
	post, stream *http.Transport
}

// newUpstreamTransport returns the transport of the relays: t for the
// POSTs, and a clone of t with small buffers for the GET streams.
func newUpstreamTransport(t *http.Transport) *upstreamTransport {
	s := t.Clone()
	s.ReadBufferSize = streamBufferBytes
	s.WriteBufferSize = streamBufferBytes
	return &upstreamTransport{post: t, stream: s}
}

func (u *upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return u.stream.RoundTrip(r)
	}
	return u.post.RoundTrip(r)
}

// CloseIdleConnections closes both transports' idle connections
// (http.Client.CloseIdleConnections calls it).
func (u *upstreamTransport) CloseIdleConnections() {
	u.post.CloseIdleConnections()
	u.stream.CloseIdleConnections()
}
