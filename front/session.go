package front

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/service"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/proxy"
)

// session is one client session: go-sdk's transport (the HTTP framing)
// connected to one relay through two pipes of lines.
type session struct {
	f    *Front
	id   string
	t    *mcp.StreamableServerTransport
	conn mcp.Connection

	active   atomic.Int32 // POSTs being served
	lastUsed atomic.Int64 // unix nanoseconds of the last POST's end

	// auth is the digest of who started the session (credentialsOf): a
	// request of the session must come from the same (a front with client
	// bearer tokens serves several users, and under
	// Options.PassAuthorization the session's upstream requests carry the
	// Authorization).
	auth [sha256.Size]byte

	mu sync.Mutex
	// pending are the client's requests not answered yet, each in its
	// state: a session holds none that will never be answered (a POST
	// that ended without its answer takes its entry with it), so that a
	// long-lived session does not grow it.
	pending map[jsonrpc.ID]callState
	closed  bool
	// inject are lines for the relay from the front itself (a
	// notifications/cancelled), read before the client's next message;
	// readCancel wakes the relay's reader out of the transport's Read to
	// read them (readCtx is that Read's context, renewed once cancelled).
	inject     [][]byte
	readCtx    context.Context
	readCancel context.CancelFunc
	readParent context.Context // readCtx's parent: the relay's context of the read
}

// callState is where a client request is (session.pending).
type callState uint8

const (
	// callPosted: its POST is being served; the relay has not read it.
	callPosted callState = iota + 1
	// callRelayed: the relay read it; no answer yet.
	callRelayed
	// callAbandoned: its POST ended before the relay read it: the relay
	// drops it when it does (its client is gone).
	callAbandoned
)

// newSession starts a session and its relay, or says why not (the cap).
func (f *Front) newSession(r *http.Request) (*session, string) {
	auth := r.Header.Values("Authorization")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.draining {
		return nil, "the server is shutting down"
	}
	if f.relays >= f.o.MaxSessions {
		f.m.refused.Inc()
		return nil, fmt.Sprintf("%d sessions and stateless requests are open, the most this server takes", f.o.MaxSessions)
	}
	id := rand.Text()
	t := &mcp.StreamableServerTransport{SessionID: id}
	conn, err := t.Connect(f.ctx)
	if err != nil {
		return nil, "the session could not be started"
	}
	s := &session{f: f, id: id, t: t, conn: conn, pending: map[jsonrpc.ID]callState{}}
	s.readParent = context.Background()
	s.readCtx, s.readCancel = context.WithCancel(s.readParent)
	s.auth = credentialsOf(r)
	s.lastUsed.Store(time.Now().UnixNano())
	f.sessions[id] = s
	f.m.sessions.Set(float64(len(f.sessions)))
	opts := f.relayOptions(id, auth)
	f.relays++
	f.runs.Add(1)
	go func() {
		defer f.runs.Done()
		// The relay reads what the client sent from the transport itself
		// (fromClient, a proxy.LineSource: no pipe, no pump goroutine),
		// and writes what it lets through straight into the transport
		// (toClient), on its own goroutines: no hand-off either way.
		err := proxy.Run(f.ctx, &fromClient{s: s}, &toClient{s: s, max: opts.MaxMessageBytes}, opts)
		f.relayDone()
		s.end(err)
	}()
	f.log.Info("session started", "session", id)
	return s, ""
}

// credentialsOf is the digest of who sent r: the client bearer token the
// service let it through with (service.TokenIdentity, which removed the
// token from the headers), and the Authorization it carries (none, if
// none).
func credentialsOf(r *http.Request) [sha256.Size]byte {
	h := sha256.New()
	if id, ok := service.TokenIdentity(r.Context()); ok {
		h.Write([]byte("token\n"))
		h.Write(id[:])
	}
	h.Write([]byte("\nauthorization\n"))
	h.Write([]byte(strings.Join(r.Header.Values("Authorization"), "\n")))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// sameAuthorization reports whether r may use the session: whether it
// comes with the client bearer token and the Authorization the session
// started with (none, if it started with none). Who learned a session's
// id is not its client (docs/SERVE.md).
func (s *session) sameAuthorization(r *http.Request) bool {
	got := credentialsOf(r)
	return subtle.ConstantTimeCompare(got[:], s.auth[:]) == 1
}

// serve serves one HTTP request of the session; call is the id of the
// request a POST carries (invalid for anything else, and for initialize,
// which is never cancelled).
func (s *session) serve(w http.ResponseWriter, r *http.Request, call jsonrpc.ID) {
	post := r.Method == http.MethodPost
	if post {
		s.active.Add(1)
		defer func() {
			s.lastUsed.Store(time.Now().UnixNano())
			s.active.Add(-1)
		}()
	}
	owned := false
	if call.IsValid() {
		s.mu.Lock()
		if _, ok := s.pending[call]; !ok && !s.closed {
			// (An id in flight already is the transport's to refuse.)
			s.pending[call] = callPosted
			owned = true
		}
		s.mu.Unlock()
	}
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: s.f.o.WriteTimeout}
	s.t.ServeHTTP(dw, r)
	if owned {
		s.postEnded(call, dw.status)
	}
	// The connection may serve another request: no deadline of this one.
	_ = dw.rc.SetWriteDeadline(time.Time{})
}

// cancelReason is the reason of the front's notifications/cancelled.
const cancelReason = "mcpsign front: the client's request ended before its answer (the front keeps no answer to resume)"

// postEnded forgets a request whose POST ended (status: what the
// transport answered it) without its answer: the client disconnected,
// or did not read. The transport keeps no event store, so the answer
// could never reach the client: a request the relay read is cancelled
// upstream (notifications/cancelled, read by the relay as if the client
// sent it, after the request), one it has not read yet is dropped when it
// does, one the transport refused never reaches it (docs/SERVE.md).
func (s *session) postEnded(call jsonrpc.ID, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.pending[call]
	switch {
	case !ok:
		// answered
	case status >= 400:
		// The transport refused this POST: its message never reached the
		// relay. An entry the relay read is another POST's (two POSTs with
		// one id raced, and the transport refused this one as a duplicate
		// in flight): that request is not this POST's to cancel.
		if st == callPosted {
			delete(s.pending, call)
		}
	case st == callRelayed:
		delete(s.pending, call)
		if line, err := cancelLine(call); err == nil {
			s.inject = append(s.inject, line)
			s.readCancel()
		}
	default:
		s.pending[call] = callAbandoned
	}
}

// release makes the transport forget a request of the client's that
// will never be answered (its POST ended before the relay read it): the
// transport keeps a request as in flight, with a stream for it, until an
// answer with its id is written, and it is given the front's, which
// reaches no one. Only for a request the relay never read: an answer of
// the upstream's to it cannot come, so the id, free again, is never
// answered twice.
func (s *session) release(call jsonrpc.ID) {
	resp := &jsonrpc.Response{ID: call, Error: &jsonrpc.Error{Code: proxy.InterruptedCode, Message: cancelReason}}
	// The error says the answer reached no stream: as meant.
	_ = s.conn.Write(context.Background(), resp)
}

// cancelLine is the front's notifications/cancelled of the request id, as
// one line.
func cancelLine(id jsonrpc.ID) ([]byte, error) {
	params, err := json.Marshal(struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason"`
	}{id.Raw(), cancelReason})
	if err != nil {
		return nil, err
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: mcpwire.MethodCancelled, Params: params})
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// idle reports whether the session received no POST for d.
func (s *session) idle(d time.Duration) bool {
	return s.active.Load() == 0 && time.Since(time.Unix(0, s.lastUsed.Load())) > d
}

// fromClient is the relay's client side: each message the client sent,
// read from the transport on the relay's reader goroutine and encoded as
// one line (a proxy.LineSource).
type fromClient struct {
	s    *session
	rest []byte // of a line Read handed on in part
}

// NextLine returns the client's next message, one line; io.EOF once the
// transport is closed.
func (c *fromClient) NextLine() ([]byte, error) {
	return c.NextLineContext(context.Background())
}

// NextLineContext is NextLine, or ctx's error once ctx ended first (a
// proxy.ContextLineSource: the relay of an HTTP upstream reads the client
// on its own run goroutine, and wakes it so).
func (c *fromClient) NextLineContext(parent context.Context) ([]byte, error) {
	s := c.s
	for {
		s.mu.Lock()
		if len(s.inject) > 0 {
			line := s.inject[0]
			s.inject = s.inject[1:]
			s.mu.Unlock()
			return line, nil
		}
		if s.readCtx.Err() != nil || s.readParent != parent {
			s.readCancel()
			s.readCtx, s.readCancel = context.WithCancel(parent)
			s.readParent = parent
		}
		ctx := s.readCtx
		s.mu.Unlock()
		msg, err := s.conn.Read(ctx)
		if err != nil {
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			if errors.Is(err, context.Canceled) {
				continue // woken for a line of the front's
			}
			return nil, io.EOF
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			if req.IsCall() {
				s.mu.Lock()
				if s.pending[req.ID] == callAbandoned {
					delete(s.pending, req.ID)
					s.mu.Unlock()
					// Its client is gone: never relayed. The transport
					// still holds it as in flight (a stream, and its id
					// refused to any later request) until an answer with
					// its id is written: it is given one, which reaches no
					// client (the POST ended, and there is no event store).
					s.release(req.ID)
					continue
				}
				s.pending[req.ID] = callRelayed
				s.mu.Unlock()
			}
			// A client's notifications/cancelled is the relay's to read
			// (strictly, once): it answers the request it cancels, and that
			// answer (deliver) is what makes the front forget it.
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			continue
		}
		return append(data, '\n'), nil
	}
}

// Read is NextLine's lines as a stream of bytes (proxy.Run reads a
// LineSource with NextLine only).
func (c *fromClient) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		line, err := c.NextLine()
		if err != nil {
			return 0, err
		}
		c.rest = line
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// toClient hands what the relay lets through to the transport, which
// routes an answer to its request's stream and everything else to the GET
// stream. The relay writes one line a Write, one Write at a time.
type toClient struct {
	s   *session
	max int
	buf []byte // a line not yet ended
}

func (c *toClient) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(c.buf)+len(p) > c.max+1 {
				return 0, fmt.Errorf("a message for the client has more than %d bytes", c.max)
			}
			c.buf = append(c.buf, p...)
			break
		}
		line := p[:i+1]
		if len(c.buf) > 0 {
			line = append(c.buf, line...)
			c.buf = nil
		}
		c.s.deliver(mcpwire.Content(line))
		p = p[i+1:]
	}
	return n, nil
}

// deliver hands one message of the relay's to the transport.
func (s *session) deliver(content []byte) {
	if len(bytes.TrimSpace(content)) == 0 {
		return
	}
	msg, err := decodeChecked(content)
	if err != nil {
		s.f.log.Warn("a message the relay let through could not be handed to the client transport", "session", s.id, "error", err.Error())
		return
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		s.mu.Lock()
		delete(s.pending, resp.ID)
		s.mu.Unlock()
	}
	if err := s.conn.Write(context.Background(), msg); err != nil {
		s.f.log.Debug("a message could not be delivered (its stream is gone)", "session", s.id, "error", err.Error())
	}
}

// end ends the session once its relay returned: every request the relay
// left unanswered (the upstream ended, or crashed mid-call) gets the
// front's error, then the transport is closed and the session forgotten.
func (s *session) end(err error) {
	why := "the session ended"
	if err != nil {
		why = err.Error()
	}
	s.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	clear(s.pending)
	s.mu.Unlock()
	for _, id := range ids {
		resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: proxy.InterruptedCode, Message: "mcpsign front: the upstream ended before it answered: " + textsafe.Escape(why)}}
		_ = s.conn.Write(context.Background(), resp)
	}
	s.close()
	var b *proxy.BlockedError
	switch {
	case err == nil:
		s.f.log.Info("session ended", "session", s.id)
	case errors.As(err, &b):
		s.f.log.Warn("session ended blocked", "session", s.id, "reason", err.Error())
	default:
		s.f.log.Warn("session ended", "session", s.id, "error", err.Error())
	}
}

// close closes the session (DELETE, idle, drain, its relay's end): the
// transport's streams end, the relay sees the client leave and stops the
// upstream, and the id is unknown from now on (404).
func (s *session) close() {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		return
	}
	s.f.mu.Lock()
	if s.f.sessions[s.id] == s {
		delete(s.f.sessions, s.id)
	}
	s.f.m.sessions.Set(float64(len(s.f.sessions)))
	s.f.mu.Unlock()
	_ = s.conn.Close()
}

// deadlineWriter bounds each write to a client (Options.WriteTimeout): a
// client that stops reading fails its stream instead of holding the
// session.
// It records the status written.
type deadlineWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController // of ResponseWriter, one for the request's writes
	d      time.Duration
	status int
}

func (w *deadlineWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	_ = w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// relayDone uncounts a relay whose proxy.Run returned (its upstream
// stopped).
func (f *Front) relayDone() {
	f.mu.Lock()
	f.relays--
	f.mu.Unlock()
}

// decodeChecked turns a message the relay let through (and so parsed and
// checked) into go-sdk's form with mcpwire's reader: go-sdk's own
// jsonrpc.DecodeMessage allocates and clears a 32 KiB decoder buffer for
// every message (github.com/segmentio/encoding's minimum), the front's
// largest cost per call (docs/PERFORMANCE.md, "HTTP front"). A response
// with a result, a request and a notification take this path; anything
// else (an error response, a null id, a message without "jsonrpc") goes
// through DecodeMessage, whose rules then apply unchanged. content is
// copied: go-sdk may keep the message after Write returns.
func decodeChecked(content []byte) (jsonrpc.Message, error) {
	content = bytes.Clone(content)
	m, err := mcpwire.Parse(content)
	if err != nil || !m.Versioned {
		return jsonrpc.DecodeMessage(content)
	}
	switch {
	case m.Kind == mcpwire.KindResponse && m.Error == nil && m.Result != nil && m.ID != nil && !m.NullID():
		id, ok := idOf(m.ID)
		if !ok {
			break
		}
		return &jsonrpc.Response{ID: id, Result: m.Result}, nil
	case m.Kind == mcpwire.KindNotification && m.ID == nil:
		return &jsonrpc.Request{Method: m.Method, Params: m.Params}, nil
	case m.Kind == mcpwire.KindRequest && m.ID != nil && !m.NullID():
		id, ok := idOf(m.ID)
		if !ok {
			break
		}
		return &jsonrpc.Request{ID: id, Method: m.Method, Params: m.Params}, nil
	}
	return jsonrpc.DecodeMessage(content)
}

// idOf reads a JSON-RPC id (a string or a number, as go-sdk reads it:
// jsonrpc.MakeID of the decoded value, mcpwire.IDValue).
func idOf(raw []byte) (jsonrpc.ID, bool) {
	v, ok := mcpwire.IDValue(raw)
	if !ok {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}
