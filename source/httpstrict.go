package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpsign/mcpsign/mcpwire"
)

// httpIDs are the ids of the requests sent over one Streamable HTTP
// connection and not answered yet, as their exact bytes.
type httpIDs struct {
	mu      sync.Mutex
	pending mcpwire.Pending[struct{}]
}

// sent records the id of a request in an HTTP request body.
func (p *httpIDs) sent(body []byte) {
	m, err := mcpwire.Parse(body)
	if err != nil || m.Kind != mcpwire.KindRequest {
		return
	}
	p.mu.Lock()
	p.pending.Add(m.ID, struct{}{})
	p.mu.Unlock()
}

// check reads one message of a response body strictly, as the stdio reader
// does: mcpwire.Parse, the JSON-RPC version, and for a response an id that
// is byte-identical to one in flight. go-sdk decodes the bytes after this
// check, leniently: only a message that cannot mean two things reaches it.
func (p *httpIDs) check(msg []byte) error {
	m, err := mcpwire.Parse(msg)
	if err == nil && !m.Versioned {
		err = errors.New(`a message without "jsonrpc":"2.0"`)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if m.Kind == mcpwire.KindResponse {
		p.mu.Lock()
		_, err = p.pending.Take(m.ID)
		p.mu.Unlock()
	}
	return err
}

// strictJSON holds a response body that is one message until it is whole
// and checked.
type strictJSON struct {
	body  io.ReadCloser
	ids   *httpIDs
	fail  func(error) error
	ready *bytes.Reader
	err   error
}

func (b *strictJSON) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.ready == nil {
		data, err := io.ReadAll(b.body) // capped by bodyCap
		if err != nil {
			b.err = err
			return 0, err
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := b.ids.check(bytes.TrimSpace(data)); err != nil {
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
	ids   *httpIDs
	fail  func(error) error
	event []byte // the bytes of the event being read
	data  []byte // its data, the data lines joined by "\n"
	out   []byte // checked bytes not yet read
	err   error
}

func newStrictSSE(body io.ReadCloser, ids *httpIDs, fail func(error) error) *strictSSE {
	return &strictSSE{body: body, r: bufio.NewReader(body), ids: ids, fail: fail}
}

func (s *strictSSE) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		line, err := s.r.ReadBytes('\n') // capped per event by sseCap
		s.event = append(s.event, line...)
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case len(content) == 0 && len(line) > 0:
			if len(s.data) > 0 {
				if cerr := s.ids.check(s.data); cerr != nil {
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
