package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// wire carries whole JSON-RPC messages to and from a server: stdio lines
// (stdioWire) or Streamable HTTP through go-sdk's transport (httpWire).
type wire interface {
	// send writes one message.
	send(ctx context.Context, msg []byte) error
	// recv returns the exact bytes of the next message.
	recv(ctx context.Context) ([]byte, error)
}

// session is one MCP client exchange: it speaks JSON-RPC itself, reads
// every message with mcpwire's strict reader, ties answers to its requests
// by their exact ids (mcpwire.Pending), and lists through mcpwire.ListAll,
// so that what it digests is what the proxy checks and a client holds.
type session struct {
	w    wire
	o    *Options
	next int64 // next request id

	// httpRejects is set for the HTTP transport: a failed send there is an
	// HTTP-level rejection of one request (a 4xx status), after which the
	// connection is still usable, so server/discover may fall back.
	httpRejects bool
	// negotiated, when set, is told the protocol version chosen by the
	// initialize handshake (the HTTP transport sends it as a header).
	negotiated func(version string)
	// exited, when set, reports why the server is gone if it is: a stdio
	// server that exited or closed its stdout. It may wait briefly for the
	// exit status.
	exited func() error
	// changed is set when the server says a list changed (list_changed)
	// while it is being listed: by Call, and for HTTP by the response
	// reader, which sees the notifications go-sdk drops after an answer.
	changed *atomic.Bool
}

// maxListings bounds how many times run lists a server that keeps saying
// its lists changed while they were read.
const maxListings = 4

// run does the handshake and lists every announced kind. ctx carries the
// timeout and the abort cause (see withLimits).
func (s *session) run(ctx context.Context) (*digest.Snapshot, error) {
	s.o.Progress(StageInitialize, 0)
	h, err := s.handshake(ctx)
	if err != nil {
		return nil, &StageError{Stage: StageInitialize, Err: err}
	}
	// A server that says a list changed while it was listed is listed
	// again, as both clients list again on list_changed and hold what that
	// listing answers (docs/REMOTE.md, "One answer per request").
	if s.changed == nil {
		s.changed = new(atomic.Bool)
	}
	var snap *digest.Snapshot
	for n := 1; ; n++ {
		s.changed.Store(false)
		snap, err = mcpwire.ListAll(ctx, s, h, mcpwire.Limits{
			MaxPages:  s.o.MaxPages,
			MaxBytes:  s.o.MaxListingBytes,
			Progress:  s.o.Progress,
			Resources: s.o.Resources,
		})
		if err != nil || !s.changed.Load() {
			break
		}
		if n == maxListings {
			return nil, fmt.Errorf("%w: the server said its lists changed (list_changed) during each of %d listings", ErrProtocol, n)
		}
	}
	var le *mcpwire.ListError
	if errors.As(err, &le) {
		return nil, &StageError{Stage: le.Method, Page: le.Page, Err: le.Err}
	}
	if snap != nil {
		// What the definitions were read under (validate made it canonical).
		snap.ClientCapabilities = s.o.ClientCapabilities
	}
	return snap, err
}

// handshake opens the session (mcpwire.Handshake).
func (s *session) handshake(ctx context.Context) (*mcpwire.Hello, error) {
	info, _ := json.Marshal(map[string]string{"name": s.o.ClientName, "version": s.o.ClientVersion})
	return mcpwire.Handshake(ctx, s, mcpwire.HandshakeOptions{
		ProtocolVersion:    s.o.ProtocolVersion,
		ClientInfo:         info,
		ClientCapabilities: s.o.ClientCapabilities,
		Rejected: func(err error) bool {
			var rej *rejectedError
			return errors.As(err, &rej)
		},
		Negotiated: s.negotiated,
	})
}

// Notify implements mcpwire.Client.
func (s *session) Notify(ctx context.Context, method string) error {
	return s.send(ctx, []byte(`{"jsonrpc":"2.0","method":`+strconv.Quote(method)+`}`))
}

// Call implements mcpwire.Caller: it sends one request and waits for its
// response, answering the server's own requests (ping) and skipping its
// notifications meanwhile. The response must carry the request's id byte
// for byte; any other response is a protocol violation.
func (s *session) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s.next++
	id := []byte(strconv.FormatInt(s.next, 10))
	var pending mcpwire.Pending[string]
	pending.Add(id, method)
	req := make([]byte, 0, 64+len(method)+len(params))
	req = append(req, `{"jsonrpc":"2.0","id":`...)
	req = append(req, id...)
	req = append(req, `,"method":`...)
	req = strconv.AppendQuote(req, method)
	if len(params) > 0 {
		req = append(req, `,"params":`...)
		req = append(req, params...)
	}
	req = append(req, '}')
	if err := s.send(ctx, req); err != nil {
		return nil, err
	}
	for {
		raw, err := s.w.recv(ctx)
		if err != nil {
			return nil, s.transportError(ctx, err, false)
		}
		m, err := mcpwire.ParseFromServer(raw)
		if err != nil {
			return nil, fmt.Errorf("%w (waiting for the answer to %s)", err, method)
		}
		switch m.Kind {
		case mcpwire.KindResponse:
			if _, err := pending.Take(m.ID); err != nil {
				return nil, fmt.Errorf("%w (waiting for the answer to %s)", err, method)
			}
			if m.Error != nil {
				return nil, mcpwire.ReadRPCError(method, m.Error)
			}
			if int64(len(m.Result)) > s.o.MaxMessageBytes {
				return nil, fmt.Errorf("%w: the %s result has %d bytes, more than %d", ErrMessageTooLarge, method, len(m.Result), s.o.MaxMessageBytes)
			}
			return m.Result, nil
		case mcpwire.KindRequest:
			if err := s.answer(ctx, &m); err != nil {
				return nil, err
			}
		case mcpwire.KindNotification:
			// Other notifications (log messages, progress) are ignored:
			// the listing is what the server answers.
			if mcpwire.IsListChanged(m.Method) && s.changed != nil {
				s.changed.Store(true)
			}
		}
	}
}

// answer replies to a request from the server: ping gets an empty result,
// roots/list no roots, anything else "method not found" (mcpsign offers no
// other client feature, whatever capabilities it was told to announce).
func (s *session) answer(ctx context.Context, req *mcpwire.Message) error {
	var body string
	switch req.Method {
	case mcpwire.MethodPing:
		body = `"result":{}`
	case "roots/list":
		body = `"result":{"roots":[]}`
	default:
		body = `"error":{"code":-32601,"message":"method not found: mcpsign only lists definitions"}`
	}
	return s.send(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,`+body+`}`))
}

func (s *session) send(ctx context.Context, msg []byte) error {
	if err := s.w.send(ctx, msg); err != nil {
		return s.transportError(ctx, err, true)
	}
	return nil
}

// rejectedError is an HTTP-level rejection of one request.
type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() error { return e.err }

// transportError turns a failed read or write into the error to report:
// the abort cause or timeout when the context is done, the server's exit
// when it is gone, an oversized message, or a protocol error.
func (s *session) transportError(ctx context.Context, err error, write bool) error {
	if ctx.Err() != nil {
		return s.unreadError(contextError(ctx))
	}
	if errors.Is(err, ErrMessageTooLarge) {
		return err
	}
	if isFrameTooLarge(err) {
		return fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, s.o.MaxMessageBytes)
	}
	if s.exited != nil && gone(err) {
		if exitErr := s.exited(); exitErr != nil {
			return s.unreadError(exitErr)
		}
	}
	if ctx.Err() != nil { // the abort may have raced with the read error
		return contextError(ctx)
	}
	if write && s.httpRejects {
		return &rejectedError{err}
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the server closed the connection", ErrProtocol)
	}
	if write {
		return fmt.Errorf("sending to the server: %w", err)
	}
	return fmt.Errorf("%w: %w", ErrProtocol, err)
}

// unreadError returns err, or when err says the server exited and it wrote
// a line nobody read that is not a message ("echo hello"), the error of that
// line: it says more than the exit.
func (s *session) unreadError(err error) error {
	if !errors.Is(err, ErrServerExited) {
		return err
	}
	if u, ok := s.w.(interface{ unread() ([]byte, bool) }); ok {
		if line, ok := u.unread(); ok {
			if _, perr := mcpwire.ParseFromServer(line); perr != nil {
				return fmt.Errorf("%w, and then the server exited", perr)
			}
		}
	}
	return err
}

// gone reports whether a read or write error means the other end is gone
// (end of stream, broken pipe) rather than that it sent something bad.
func gone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, mcp.ErrConnectionClosed)
}

// isFrameTooLarge recognizes go-sdk's errFrameTooLarge (unexported) from
// its text; the package's own caps report ErrMessageTooLarge through the
// context cause before the transport does.
func isFrameTooLarge(err error) bool {
	return strings.Contains(err.Error(), "exceeded the configured maximum line length")
}

// contextError reports why ctx is done: an abort cause set by a size cap,
// the listing timeout, or the caller's cancellation.
func contextError(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = ctx.Err()
	}
	return cause
}

// timeoutCause is the cause of the listing timeout.
func timeoutCause(d time.Duration) error {
	return fmt.Errorf("%w: no complete answer within %s", ErrTimeout, d)
}

// withLimits returns the context of one live exchange: done with a
// timeoutCause after o.Timeout, or with the cause given to abort (a size cap
// tripped inside a transport). stop releases it.
func withLimits(parent context.Context, o *Options) (ctx context.Context, abort context.CancelCauseFunc, stop func()) {
	ctx, abort = context.WithCancelCause(parent)
	ctx, stopTimer := context.WithTimeoutCause(ctx, o.Timeout, timeoutCause(o.Timeout))
	return ctx, abort, func() { stopTimer(); abort(nil) }
}
