package mcpwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Disposition says what a reader of one Streamable HTTP response does with
// a message that [StreamCheck.Message] accepted.
type Disposition uint8

const (
	// Relay: pass the message on now (a notification or a server request
	// that comes before the answer; every message of a GET stream).
	Relay Disposition = iota + 1
	// Hold: keep it, and pass it on only once the stream has ended cleanly,
	// in the order [StreamCheck.End] returns it (the answer, and the
	// notifications after it).
	Hold
)

func (d Disposition) String() string {
	switch d {
	case Relay:
		return "relay"
	case Hold:
		return "hold"
	}
	return "invalid disposition"
}

// ErrStream marks a Streamable HTTP response whose messages the official
// clients could take for different answers: a second answer, an answer on
// a GET stream, a request after the answer, a stream that ends without the
// answer (docs/REMOTE.md, "Reading Streamable HTTP"). An error wrapping it
// also wraps ErrProtocol.
var ErrStream = errors.New("unreadable response stream")

// StreamError is a response stream refused by [StreamCheck].
type StreamError struct{ Reason string }

func (e *StreamError) Error() string { return e.Reason }

// Unwrap makes the error match both ErrProtocol and ErrStream.
func (e *StreamError) Unwrap() []error { return []error{ErrProtocol, ErrStream} }

// StreamCheck checks the messages of one Streamable HTTP response, in the
// order they come: the response to one POSTed request ([NewPostCheck]), or
// a GET stream ([NewGetCheck]). The rule of a POST response is that every
// official client holds the same one answer from it:
//
//   - exactly one answer, to the posted request's id byte for byte; a
//     second answer, or one to another id, is refused;
//   - before the answer, notifications and server requests, relayed as
//     they come (a server may wait for the answer to its request);
//   - after the answer, only notifications: go-sdk stops reading at the
//     answer and the TypeScript SDK reads on, so a request after it would
//     reach one and not the other;
//   - the answer (and the notifications after it) are released only once
//     the stream has ended cleanly ([StreamCheck.End]): whatever comes
//     before the end can still refuse the whole response.
//
// A GET stream carries requests and notifications only: nothing is pending
// on it, so an answer there is refused.
//
// Every message is read with [ParseFromServer]. A StreamCheck is not safe
// for concurrent use; after an error it returns that error again.
type StreamCheck struct {
	get      bool
	pending  Pending[struct{}] // the posted request's id, until answered
	method   string
	answered bool
	held     [][]byte
	err      error
}

// NewPostCheck checks the response to a POST of request (the JSON-RPC
// message posted, as sent). Only a request is answered: for a notification
// or a response the server owes no message (202 Accepted), and
// NewPostCheck returns an error.
func NewPostCheck(request []byte) (*StreamCheck, error) {
	m, err := Parse(request)
	if err != nil {
		return nil, fmt.Errorf("the posted message: %w", err)
	}
	if m.Kind != KindRequest {
		return nil, fmt.Errorf("the posted message is a %s, which is not answered", m.Kind)
	}
	c := &StreamCheck{method: m.Method}
	_ = c.pending.Add(bytes.Clone(m.ID), struct{}{})
	return c, nil
}

// NewGetCheck checks a GET stream (the server's own stream of requests and
// notifications).
func NewGetCheck() *StreamCheck { return &StreamCheck{get: true} }

// Message checks the next message of the stream (the data of one event, or
// a JSON body) and says what to do with it. A Hold message is kept by the
// check and returned by End. An error refuses the whole response: nothing
// held may be passed on.
func (c *StreamCheck) Message(data []byte) (Disposition, error) {
	if c.err != nil {
		return 0, c.err
	}
	d, err := c.message(data)
	if err != nil {
		c.err, c.held = err, nil
	}
	return d, err
}

func (c *StreamCheck) message(data []byte) (Disposition, error) {
	m, err := ParseFromServer(data)
	if err != nil {
		return 0, err
	}
	switch m.Kind {
	case KindResponse:
		if c.get {
			return 0, &StreamError{"an answer on a GET stream, where no request is pending"}
		}
		if c.answered {
			return 0, &StreamError{"a second answer to " + c.method + " in one response"}
		}
		if _, err := c.pending.Take(m.ID); err != nil {
			return 0, fmt.Errorf("%w (in the response to %s)", err, c.method)
		}
		c.answered = true
		c.held = append(c.held, bytes.Clone(data))
		return Hold, nil
	case KindRequest:
		if c.answered {
			return 0, &StreamError{"a request (" + textsafe.Cut(m.Method, 80) + ") after the answer to " + c.method + " (go-sdk stops reading at the answer, the TypeScript SDK does not)"}
		}
		return Relay, nil
	default: // a notification
		if c.answered {
			c.held = append(c.held, bytes.Clone(data))
			return Hold, nil
		}
		return Relay, nil
	}
}

// End reports that the stream ended cleanly (the end of the body, after a
// blank line for an event stream) and returns the messages held, in order:
// the answer first. A POST response that ended without its answer is an
// error.
func (c *StreamCheck) End() ([][]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if !c.get && !c.answered {
		c.err = &StreamError{"the response ended without the answer to " + c.method}
		return nil, c.err
	}
	held := c.held
	c.held = nil
	return held, nil
}

// Answered reports whether the answer has been read (and is held).
func (c *StreamCheck) Answered() bool { return c.answered }

// BodyKind is how a response body frames its messages.
type BodyKind uint8

const (
	// BodyJSON: application/json, one message.
	BodyJSON BodyKind = iota + 1
	// BodyEventStream: text/event-stream, one message per event.
	BodyEventStream
)

// ErrContentType marks a response whose Content-Type is not exactly one
// that every official client reads alike. An error wrapping it also wraps
// ErrProtocol.
var ErrContentType = errors.New("unsupported content type")

// ReadContentType reads the Content-Type of a response that carries
// messages, as strictly as the strictest official client: exactly one
// header, the media type application/json or text/event-stream (in any
// case, as both clients lowercase it), and no parameter but charset=utf-8.
// A missing type, joined or repeated headers, another charset (both
// clients read the body as UTF-8 whatever it says) and any other parameter
// are refused with an error wrapping ErrContentType, and so is a
// Content-Encoding still present (Go's transport removes it once it has
// decoded a gzip body). The value is never quoted in the error beyond its
// media type.
func ReadContentType(h http.Header) (BodyKind, error) {
	if enc := h.Values("Content-Encoding"); len(enc) > 0 {
		// Go's transport removes the header of a gzip body it decoded: what
		// is left was not decoded, and a client that decodes more (the
		// TypeScript SDK's fetch: br, deflate, lists) would read another
		// body.
		return 0, contentTypeError("a Content-Encoding that was not decoded (only gzip is read)")
	}
	values := h.Values("Content-Type")
	switch {
	case len(values) == 0 || len(values) == 1 && strings.TrimSpace(values[0]) == "":
		return 0, contentTypeError("no Content-Type")
	case len(values) > 1:
		return 0, contentTypeError("more than one Content-Type")
	case strings.Contains(values[0], ","):
		return 0, contentTypeError("a Content-Type that joins several types")
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil {
		return 0, contentTypeError("a Content-Type that does not parse")
	}
	var kind BodyKind
	switch mt {
	case "application/json":
		kind = BodyJSON
	case "text/event-stream":
		kind = BodyEventStream
	default:
		return 0, contentTypeError("Content-Type " + textsafe.Cut(mt, 80) + " (want application/json or text/event-stream)")
	}
	for name, v := range params {
		if name != "charset" {
			return 0, contentTypeError("Content-Type " + mt + " with a parameter other than charset")
		}
		if !strings.EqualFold(v, "utf-8") {
			return 0, contentTypeError("Content-Type " + mt + " with a charset other than utf-8")
		}
	}
	return kind, nil
}

func contentTypeError(reason string) error {
	return fmt.Errorf("%w: %w: %s", ErrProtocol, ErrContentType, reason)
}

// SessionIDs follows the Mcp-Session-Id of one Streamable HTTP connection.
// go-sdk keeps the first session id a server sends and fails on a
// different one; the TypeScript SDK takes every new one: a server that
// changes it would lead the two into different sessions, so it is refused.
// Safe for concurrent use.
type SessionIDs struct {
	mu sync.Mutex
	id string
}

// MaxSessionIDBytes bounds a session id.
const MaxSessionIDBytes = 1024

// Check reads the Mcp-Session-Id of a response: at most one, visible ASCII
// (0x21 to 0x7E, as the MCP specification requires), at most
// MaxSessionIDBytes, and once one is known, no other. The error wraps
// ErrProtocol and never quotes the id (it is a credential of sorts).
func (s *SessionIDs) Check(h http.Header) error {
	values := h.Values("Mcp-Session-Id")
	switch {
	case len(values) == 0:
		return nil
	case len(values) > 1:
		return fmt.Errorf("%w: more than one Mcp-Session-Id header", ErrProtocol)
	}
	v := values[0]
	if v == "" || len(v) > MaxSessionIDBytes {
		return fmt.Errorf("%w: an empty or overlong Mcp-Session-Id", ErrProtocol)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return fmt.Errorf("%w: an Mcp-Session-Id that is not visible ASCII", ErrProtocol)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == "" {
		s.id = v
		return nil
	}
	if s.id != v {
		return fmt.Errorf("%w: the server changed its Mcp-Session-Id (go-sdk would fail, the TypeScript SDK would follow)", ErrProtocol)
	}
	return nil
}

// ID returns the session id learned, "" if none.
func (s *SessionIDs) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Defaults of [ResponseOptions].
const (
	DefaultMaxBodyBytes = 64 << 20
	// DefaultEndWait is how long a POST response stream may stay open
	// after its answer before it is refused.
	DefaultEndWait = 3 * time.Second
	// EventOverhead is the room an event has beyond its message, for the
	// field names, an id and comments.
	EventOverhead = 16 << 10
)

// ResponseOptions bounds the reading of one response body.
type ResponseOptions struct {
	// MaxMessageBytes caps one message (the data of an event, or a JSON
	// body); an event may have EventOverhead bytes more. Zero means
	// 16 MiB.
	MaxMessageBytes int
	// MaxBodyBytes caps the whole body. Zero means DefaultMaxBodyBytes;
	// a negative value means no cap (a GET stream that lasts as long as
	// the session; each event is still capped).
	MaxBodyBytes int64
	// EndWait is how long a POST response may stay open after its answer;
	// a stream that has not ended by then is refused (whatever could still
	// come might change what a client holds). Zero means DefaultEndWait.
	EndWait time.Duration
}

func (o ResponseOptions) withDefaults() ResponseOptions {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 16 << 20
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.EndWait <= 0 {
		o.EndWait = DefaultEndWait
	}
	return o
}

// ReadResponse reads a whole response body of the given kind strictly
// ([EventReader], [StreamCheck]) and closes it. relay is called with each
// message to pass on now, in order (its data, a fresh slice); a relay
// error stops the reading and is returned. Once the body has ended cleanly
// ReadResponse returns the messages held (for a POST: the answer, then the
// notifications after it). When ctx is done, or the stream stays open
// longer than o.EndWait after the answer, the body is closed and the error
// returned. No message of a refused response is ever returned as held; the
// ones relayed before the violation came before the answer (and a client
// would have had them too).
//
// A JSON body is one message, the answer (a BOM before it is refused: the
// TypeScript SDK drops it, go-sdk fails on it).
func ReadResponse(ctx context.Context, kind BodyKind, body io.ReadCloser, c *StreamCheck, o ResponseOptions, relay func(msg []byte) error) ([][]byte, error) {
	o = o.withDefaults()
	var closeOnce sync.Once
	closeBody := func() { closeOnce.Do(func() { body.Close() }) }
	defer closeBody()

	var (
		mu       sync.Mutex
		stopped  error // why the body was closed under the reader
		endTimer *time.Timer
	)
	stop := func(err error) {
		mu.Lock()
		if stopped == nil {
			stopped = err
		}
		mu.Unlock()
		closeBody()
	}
	why := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if stopped != nil {
			return stopped
		}
		return err
	}
	done := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if cause == nil {
			cause = ctx.Err()
		}
		stop(cause)
	})
	defer done()
	defer func() {
		if endTimer != nil {
			endTimer.Stop()
		}
	}()

	var r io.Reader = body
	if o.MaxBodyBytes > 0 {
		r = LimitBody(body, o.MaxBodyBytes)
	}
	if kind == BodyJSON {
		data, err := io.ReadAll(io.LimitReader(r, int64(o.MaxMessageBytes)+1))
		if err != nil {
			return nil, why(fmt.Errorf("reading the response: %w", err))
		}
		if len(data) > o.MaxMessageBytes {
			return nil, fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, o.MaxMessageBytes)
		}
		if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
			return nil, &StreamError{"a byte-order mark before the JSON body (the TypeScript SDK drops it, go-sdk fails on it)"}
		}
		if _, err := c.Message(data); err != nil {
			return nil, err
		}
		return c.End()
	}
	if kind != BodyEventStream {
		return nil, fmt.Errorf("%w: %w: no body kind", ErrProtocol, ErrContentType)
	}
	size := readBufferBytes
	if o.MaxBodyBytes < 0 {
		size = streamBufferBytes
	}
	er := newPooledEventReader(r, o.MaxMessageBytes+EventOverhead, size)
	defer er.release()
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			if err := why(nil); err != nil {
				return nil, err
			}
			return c.End()
		}
		if _, ok := errors.AsType[*eventTooLarge](err); ok {
			// The event's cap is the message's and some room: say the one
			// the caller gave.
			err = fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, o.MaxMessageBytes)
		}
		if err != nil {
			return nil, why(err)
		}
		if len(ev.Data) > o.MaxMessageBytes {
			return nil, fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, o.MaxMessageBytes)
		}
		answered := c.Answered()
		d, err := c.Message(ev.Data)
		if err != nil {
			return nil, err
		}
		if !answered && c.Answered() {
			endTimer = time.AfterFunc(o.EndWait, func() {
				stop(&StreamError{fmt.Sprintf("the response stream stayed open more than %s after its answer", o.EndWait)})
			})
		}
		if d == Relay {
			if err := relay(ev.Data); err != nil {
				return nil, err
			}
		}
	}
}

// LimitBody returns body capped at max bytes: a read beyond them fails
// with an error wrapping ErrMessageTooLarge (a body is never cut short
// silently). Closing it closes body.
func LimitBody(body io.ReadCloser, max int64) io.ReadCloser {
	return &capReader{body: body, left: max, max: max}
}

// capReader fails once more than max bytes have been read.
type capReader struct {
	body io.ReadCloser
	left int64
	max  int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.tooLarge()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.body.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, c.tooLarge()
	}
	return n, err
}

func (c *capReader) Close() error { return c.body.Close() }

func (c *capReader) tooLarge() error {
	return fmt.Errorf("%w: the response body has more than %d bytes", ErrMessageTooLarge, c.max)
}
