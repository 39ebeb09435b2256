package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
)

// codeMethodNotFound is the JSON-RPC error code for an unknown method.
const codeMethodNotFound = -32601

// session drives one MCP client exchange over a go-sdk transport connection,
// speaking JSON-RPC itself so that every result is seen as the raw bytes the
// server sent, and no page ever comes from a cache.
type session struct {
	conn mcp.Connection
	o    *Options
	next int64 // next request id

	// httpRejects is set for the HTTP transport: a failed Write there is an
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
}

// hello is what the handshake learned.
type hello struct {
	protocolVersion string
	modern          bool // server/discover succeeded: every request carries _meta
	server          digest.ServerInfo
	instructions    *string
	caps            map[string]json.RawMessage
}

// run does the handshake and lists every announced kind. ctx carries the
// timeout and the abort cause (see withLimits).
func (s *session) run(ctx context.Context) (*digest.Snapshot, error) {
	s.o.Progress(StageInitialize, 0)
	h, err := s.handshake(ctx)
	if err != nil {
		return nil, &StageError{Stage: StageInitialize, Err: err}
	}
	snap := &digest.Snapshot{
		Kind:            digest.SnapshotKind,
		SnapshotVersion: digest.SnapshotVersion,
		Server:          h.server,
		ProtocolVersion: h.protocolVersion,
		Instructions:    h.instructions,
	}
	for _, k := range digest.Kinds {
		defs := []json.RawMessage{}
		if announced(h.caps, k.Capability()) {
			defs, err = s.list(ctx, h, k)
			if err != nil {
				return nil, err
			}
		}
		snap.SetDefinitions(k, defs)
	}
	snap.CapturedAt = time.Now().UTC()
	return snap, nil
}

// announced reports whether the server announced the capability name (a
// member that is present and not null).
func announced(caps map[string]json.RawMessage, name string) bool {
	v, ok := caps[name]
	return ok && string(v) != "null"
}

// handshake follows the go-sdk client: server/discover first (2026-07-28),
// then the initialize handshake when the server does not speak it.
func (s *session) handshake(ctx context.Context) (*hello, error) {
	want := s.o.ProtocolVersion
	if want == "" || want == ProtocolModern {
		h, err := s.discover(ctx)
		if err == nil {
			return h, nil
		}
		var fb *fallbackError
		if !errors.As(err, &fb) {
			return nil, err
		}
		if want == ProtocolModern {
			return nil, fmt.Errorf("server/discover (protocol %s forced): %w", ProtocolModern, fb.err)
		}
		want = ProtocolLegacy
	}
	return s.initialize(ctx, want)
}

// fallbackError marks a server/discover failure after which the initialize
// handshake is tried: the server answered with an error, or did not offer
// the modern version.
type fallbackError struct{ err error }

func (e *fallbackError) Error() string { return e.err.Error() }
func (e *fallbackError) Unwrap() error { return e.err }

func (s *session) clientInfo() map[string]string {
	return map[string]string{"name": s.o.ClientName, "version": s.o.ClientVersion}
}

// requestMeta is the SEP-2575 per-request _meta that go-sdk v1.8.0 sends
// (client.go injectRequestMeta): protocol version, client info, and client
// capabilities.
func (s *session) requestMeta(version string) map[string]any {
	return map[string]any{
		mcp.MetaKeyProtocolVersion:    version,
		mcp.MetaKeyClientInfo:         s.clientInfo(),
		mcp.MetaKeyClientCapabilities: s.o.ClientCapabilities,
	}
}

func (s *session) discover(ctx context.Context) (*hello, error) {
	const method = "server/discover"
	raw, err := s.call(ctx, method, map[string]any{"_meta": s.requestMeta(ProtocolModern)})
	if err != nil {
		var rpc *RPCError
		var rej *rejectedError
		if errors.As(err, &rpc) || errors.As(err, &rej) {
			// go-sdk falls back to initialize on any error answer; an
			// UnsupportedProtocolVersion error naming a newer modern
			// version would be retried there, but this package speaks only
			// one modern version, so it falls back as well.
			return nil, &fallbackError{err}
		}
		return nil, err
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Instructions      json.RawMessage            `json:"instructions"`
		ServerInfo        json.RawMessage            `json:"serverInfo"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%w: %s result: %w", ErrProtocol, method, err)
	}
	supported := false
	for _, v := range res.SupportedVersions {
		supported = supported || v == ProtocolModern
	}
	if !supported {
		return nil, &fallbackError{fmt.Errorf("server/discover offers versions %s, not %s", shorten(strings.Join(res.SupportedVersions, ", "), 200), ProtocolModern)}
	}
	h := &hello{protocolVersion: ProtocolModern, modern: true, caps: res.Capabilities}
	info := res.ServerInfo
	if len(info) == 0 || string(info) == "null" {
		info = res.Meta[mcp.MetaKeyServerInfo] // where go-sdk v1.8.0 puts it
	}
	if h.server, err = serverInfo(info); err != nil {
		return nil, err
	}
	if h.instructions, err = instructions(res.Instructions); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *session) initialize(ctx context.Context, version string) (*hello, error) {
	raw, err := s.call(ctx, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    s.o.ClientCapabilities,
		"clientInfo":      s.clientInfo(),
	})
	if err != nil {
		return nil, err
	}
	var res struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage            `json:"serverInfo"`
		Instructions    json.RawMessage            `json:"instructions"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%w: initialize result: %w", ErrProtocol, err)
	}
	if !isLegacy(res.ProtocolVersion) {
		return nil, fmt.Errorf("%w: server chose protocol version %s, which the initialize handshake does not support", ErrProtocol, shorten(res.ProtocolVersion, 64))
	}
	h := &hello{protocolVersion: res.ProtocolVersion, caps: res.Capabilities}
	if h.server, err = serverInfo(res.ServerInfo); err != nil {
		return nil, err
	}
	if h.instructions, err = instructions(res.Instructions); err != nil {
		return nil, err
	}
	if s.negotiated != nil {
		s.negotiated(res.ProtocolVersion)
	}
	if err := s.notify(ctx, "notifications/initialized"); err != nil {
		return nil, err
	}
	return h, nil
}

// serverInfo reads serverInfo strictly (digest.ParseServerInfo).
func serverInfo(raw json.RawMessage) (digest.ServerInfo, error) {
	si, err := digest.ParseServerInfo(raw)
	if err != nil {
		return si, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return si, nil
}

// instructions reads the instructions strictly: their digest is over the
// exact text, so invalid UTF-8 or a lone surrogate is refused rather than
// replaced. Absent or null means none.
func instructions(raw json.RawMessage) (*string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	str, err := digest.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: instructions: %w", ErrProtocol, err)
	}
	return &str, nil
}

// list reads every page of one kind.
func (s *session) list(ctx context.Context, h *hello, k digest.Kind) ([]json.RawMessage, error) {
	method := k.ListMethod()
	all := []json.RawMessage{}
	seen := map[string]bool{"": true} // the first page is asked for without a cursor
	cursor := ""
	for page := 1; ; page++ {
		s.o.Progress(method, page)
		params := map[string]any{}
		if h.modern {
			params["_meta"] = s.requestMeta(h.protocolVersion)
		}
		if page > 1 {
			params["cursor"] = cursor
		}
		raw, err := s.call(ctx, method, params)
		if err != nil {
			var rpc *RPCError
			if k == digest.KindResourceTemplate && page == 1 && errors.As(err, &rpc) && rpc.Code == codeMethodNotFound {
				// Announcing resources without implementing templates is
				// common (resources/list only): the server has none.
				return all, nil
			}
			return nil, &StageError{Stage: method, Page: page, Err: err}
		}
		items, next, hasNext, err := digest.SplitList(k, raw)
		if err != nil {
			return nil, &StageError{Stage: method, Page: page, Err: fmt.Errorf("%w: %w", ErrProtocol, err)}
		}
		all = append(all, items...)
		if !hasNext {
			return all, nil
		}
		if seen[next] {
			return nil, &StageError{Stage: method, Page: page, Err: fmt.Errorf("cursor %s repeated (%w)", shorten(next, 80), ErrCursorLoop)}
		}
		if page >= s.o.MaxPages {
			return nil, &StageError{Stage: method, Page: page, Err: fmt.Errorf("%w: page %d still has a nextCursor (at most %d pages are read)", ErrTooManyPages, page, s.o.MaxPages)}
		}
		seen[next] = true
		cursor = next
	}
}

// call sends one request and waits for its response, answering the
// server's own requests (ping) and skipping its notifications meanwhile.
func (s *session) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	s.next++
	id, err := jsonrpc.MakeID(float64(s.next))
	if err != nil {
		return nil, err
	}
	if err := s.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: p}); err != nil {
		return nil, s.transportError(ctx, err, true)
	}
	for {
		msg, err := s.conn.Read(ctx)
		if err != nil {
			return nil, s.transportError(ctx, err, false)
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if m.ID != id {
				got := fmt.Sprint(m.ID.Raw())
				if str, ok := m.ID.Raw().(string); ok {
					got = shorten(str, 40)
				}
				return nil, fmt.Errorf("%w: response to request id %s, which was never sent (waiting for %s)", ErrProtocol, got, method)
			}
			if m.Error != nil {
				var we *jsonrpc.Error
				if errors.As(m.Error, &we) {
					return nil, &RPCError{Method: method, Code: we.Code, Message: we.Message}
				}
				// A transport-made error (go-sdk's HTTP client reports a
				// stream that ended without the response this way).
				return nil, fmt.Errorf("%s: %w", method, m.Error)
			}
			if len(m.Result) == 0 {
				return nil, fmt.Errorf("%w: response to %s has neither result nor error", ErrProtocol, method)
			}
			if int64(len(m.Result)) > s.o.MaxMessageBytes {
				return nil, fmt.Errorf("%w: the %s result has %d bytes, more than %d", ErrMessageTooLarge, method, len(m.Result), s.o.MaxMessageBytes)
			}
			return m.Result, nil
		case *jsonrpc.Request:
			if m.IsCall() {
				if err := s.answer(ctx, m); err != nil {
					return nil, s.transportError(ctx, err, true)
				}
			}
			// Notifications (log messages, list_changed, progress) are
			// ignored: the listing is what the server answers.
		}
	}
}

// answer replies to a request from the server: ping gets an empty result,
// roots/list no roots, anything else "method not found" (mcpsign offers no
// other client feature, whatever capabilities it was told to announce).
func (s *session) answer(ctx context.Context, req *jsonrpc.Request) error {
	resp := &jsonrpc.Response{ID: req.ID}
	switch req.Method {
	case "ping":
		resp.Result = json.RawMessage(`{}`)
	case "roots/list":
		resp.Result = json.RawMessage(`{"roots":[]}`)
	default:
		resp.Error = &jsonrpc.Error{Code: codeMethodNotFound, Message: "method not found: mcpsign only lists definitions"}
	}
	return s.conn.Write(ctx, resp)
}

func (s *session) notify(ctx context.Context, method string) error {
	if err := s.conn.Write(ctx, &jsonrpc.Request{Method: method}); err != nil {
		return s.transportError(ctx, err, true)
	}
	return nil
}

// rejectedError is an HTTP-level rejection of one request.
type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() error { return e.err }

// transportError turns a failed Read or Write into the error to report:
// the abort cause or timeout when the context is done, the server's exit
// when it is gone, an oversized message, or a protocol error.
func (s *session) transportError(ctx context.Context, err error, write bool) error {
	if ctx.Err() != nil {
		return contextError(ctx)
	}
	if isFrameTooLarge(err) {
		return fmt.Errorf("%w: a message has more than %d bytes", ErrMessageTooLarge, s.o.MaxMessageBytes)
	}
	if s.exited != nil && gone(err) {
		if exitErr := s.exited(); exitErr != nil {
			return exitErr
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
