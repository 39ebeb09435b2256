package mcpwire

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// HTTPBodies reads the bodies of one Streamable HTTP connection strictly,
// as the stdio reader reads lines: it learns the ids of the requests posted
// (Sent) and wraps every response body (JSON or SSE) so that each message
// in it is checked (Parse, the JSON-RPC version, and for a response an id
// byte-identical to one in flight) before the bytes are passed on. A
// transport that decodes the bytes after this check, leniently (go-sdk's),
// only ever sees messages that cannot mean two things. Safe for concurrent
// use.
type HTTPBodies struct {
	mu      sync.Mutex
	pending Pending[struct{}]
}

// Sent records the id of a request in an HTTP request body.
func (p *HTTPBodies) Sent(body []byte) {
	m, err := Parse(body)
	if err != nil || m.Kind != KindRequest {
		return
	}
	p.mu.Lock()
	// An id already in flight is not recorded twice (Add refuses it): its
	// second answer then matches nothing and Check refuses it, closed.
	_ = p.pending.Add(m.ID, struct{}{})
	p.mu.Unlock()
}

// Check reads one message of a response body strictly: Parse, the JSON-RPC
// version, and for a response an id byte-identical to one in flight, which
// it then no longer is.
func (p *HTTPBodies) Check(msg []byte) error {
	m, err := ParseFromServer(msg)
	if err != nil {
		return err
	}
	if m.Kind == KindResponse {
		p.mu.Lock()
		_, err = p.pending.Take(m.ID)
		p.mu.Unlock()
	}
	return err
}

// JSON wraps a response body that holds one message (application/json):
// nothing of it is passed on until it is whole and checked. fail is told
// the violation and returns the error the reader reports.
func (p *HTTPBodies) JSON(body io.ReadCloser, fail func(error) error) io.ReadCloser {
	return &strictJSON{body: body, ids: p, fail: fail}
}

// SSE wraps a server-sent event stream (text/event-stream): each event is
// passed on once the message in its data lines was checked.
func (p *HTTPBodies) SSE(body io.ReadCloser, fail func(error) error) io.ReadCloser {
	return &strictSSE{body: body, r: bufio.NewReader(body), ids: p, fail: fail}
}

// strictJSON holds a response body that is one message until it is whole
// and checked.
type strictJSON struct {
	body  io.ReadCloser
	ids   *HTTPBodies
	fail  func(error) error
	ready *bytes.Reader
	err   error
}

func (b *strictJSON) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.ready == nil {
		data, err := io.ReadAll(b.body) // the caller caps the body
		if err != nil {
			b.err = err
			return 0, err
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := b.ids.Check(bytes.TrimSpace(data)); err != nil {
				b.err = b.fail(err)
				return 0, b.err
			}
		}
		b.ready = bytes.NewReader(data)
	}
	return b.ready.Read(p)
}

func (b *strictJSON) Close() error { return b.body.Close() }

// strictSSE passes a server-sent event stream on one event at a time, each
// once the message in its data lines was checked.
type strictSSE struct {
	body  io.ReadCloser
	r     *bufio.Reader
	ids   *HTTPBodies
	fail  func(error) error
	event []byte // the bytes of the event being read
	data  []byte // its data, the data lines joined by "\n"
	out   []byte // checked bytes not yet read
	err   error
}

func (s *strictSSE) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		line, err := s.r.ReadBytes('\n') // the caller caps each event
		s.event = append(s.event, line...)
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case len(content) == 0 && len(line) > 0:
			if len(s.data) > 0 {
				if cerr := s.ids.Check(s.data); cerr != nil {
					s.err = s.fail(cerr)
					return 0, s.err
				}
			}
			s.out, s.event, s.data = s.event, nil, nil
		case bytes.HasPrefix(content, []byte("data:")):
			v := bytes.TrimPrefix(content[5:], []byte(" "))
			if s.data != nil {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
			if s.data == nil {
				s.data = []byte{}
			}
		}
		if err != nil {
			if len(s.data) > 0 {
				// An event cut off by the end of the stream is not
				// dispatched by an SSE reader: it is not passed on.
				s.event = nil
			}
			s.out = s.event
			s.err = err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *strictSSE) Close() error { return s.body.Close() }
