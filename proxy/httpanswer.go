package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mcpsign/mcpsign/internal/textsafe"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// readAnswer reads the answer body to the posted request, through mcpwire
// (docs/PROXY.md, "Remote servers"): application/json (one message, the
// answer) or text/event-stream, in which requests and notifications before
// the answer reach the relay as they come, the answer must carry the
// request's id byte for byte, only notifications may follow it, and the
// answer and what follows are released when the stream ended cleanly.
// The answer to initialize also gives the protocol version that later
// requests' header carries.
func (u *httpConn) readAnswer(resp *http.Response, posted []byte, m *mcpwire.Message) error {
	kind, err := mcpwire.ReadContentType(resp.Header)
	if err != nil {
		return err
	}
	c, err := mcpwire.NewPostCheck(posted)
	if err != nil {
		return err
	}
	held, err := mcpwire.ReadResponse(u.ctx, kind, resp.Body, c, mcpwire.ResponseOptions{MaxMessageBytes: u.max}, u.deliver)
	if err != nil {
		return u.readError(err)
	}
	for i, msg := range held {
		if i == 0 && m.Method == mcpwire.MethodInitialize {
			u.learnVersion(msg)
		}
		if err := u.deliver(msg); err != nil {
			return err
		}
	}
	return nil
}

// errorBody reads the body of an error status: it reports whether it was
// a JSON-RPC error answer to the posted request, read strictly, and passed
// on.
func (u *httpConn) errorBody(resp *http.Response, posted []byte) bool {
	kind, err := mcpwire.ReadContentType(resp.Header)
	if err != nil || kind != mcpwire.BodyJSON {
		return false
	}
	c, err := mcpwire.NewPostCheck(posted)
	if err != nil {
		return false
	}
	held, err := mcpwire.ReadResponse(u.ctx, kind, resp.Body, c, mcpwire.ResponseOptions{MaxMessageBytes: maxErrBody}, u.deliver)
	if err != nil || len(held) != 1 {
		return false
	}
	if m, err := mcpwire.ParseFromServer(held[0]); err != nil || m.Error == nil {
		return false
	}
	return u.deliver(held[0]) == nil
}

// learnVersion takes the negotiated protocol version from the initialize
// answer, for the header of every later request.
func (u *httpConn) learnVersion(msg []byte) {
	m, err := mcpwire.ParseFromServer(msg)
	if err != nil || m.Result == nil {
		return
	}
	if h, err := mcpwire.ParseInitialize(m.Result); err == nil {
		u.mu.Lock()
		u.version = h.ProtocolVersion
		u.mu.Unlock()
	}
}

// readError is the error of a body that could not be read: a protocol
// violation or an oversized message as it is (the session is blocked), the
// end of the session as io.EOF, anything else a broken connection.
func (u *httpConn) readError(err error) error {
	switch {
	case u.ctx.Err() != nil, errors.Is(err, context.Canceled):
		return errIgnore
	case errors.Is(err, mcpwire.ErrProtocol), errors.Is(err, mcpwire.ErrMessageTooLarge):
		return err
	}
	return &ConnectError{URL: u.redacted(), Err: err, What: "reading the answer of " + u.redacted() + " failed", Hint: "check the server and the network"}
}

// errIgnore is what a body reader returns when the session ended under it.
var errIgnore = errors.New("the session ended")

// answer reads the answer to the request m: a JSON body or an event
// stream, read through mcpwire, whose messages go to the relay. An error
// status becomes an error answer of the proxy's, so that the request gets
// its one answer; an answer that breaks the transport ends the session
// with a protocol violation. It reports whether the answer was cut short
// by the end of its request's context (nothing of the answer was passed
// on).
func (u *httpConn) answer(resp *http.Response, m *mcpwire.Message, body []byte) (cut bool) {
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		u.end(fmt.Errorf("%w: the server accepted the request %s (202) without answering it", mcpwire.ErrProtocol, textsafe.Cut(m.Method, 100)))
	case resp.StatusCode/100 != 2:
		// A JSON-RPC error answer in the body (an unsupported protocol
		// version, say: clients fall back on its code) is passed on when it
		// reads strictly as the answer; else the proxy answers.
		if !u.errorBody(resp, body) {
			if err := u.deliverError(m.ID, "mcpsign proxy: the server answered "+statusText(resp)); err != nil {
				u.end(err) // the session ended (io.EOF): the first end stands
			}
		}
	default:
		err := u.readAnswer(resp, body, m)
		if err != nil && err != errIgnore {
			u.end(err)
		}
		return err == errIgnore
	}
	return false
}

// deliver hands one message to the relay as one line: to the relay's
// handler on this goroutine when the relay gave one (receiveTo), else
// through Receive.
func (u *httpConn) deliver(msg []byte) error {
	line, err := asLine(msg)
	if err != nil {
		return err
	}
	u.pushMu.Lock()
	if push := u.push; push != nil {
		defer u.pushMu.Unlock()
		select {
		case <-u.ended:
			return io.EOF
		default:
		}
		push(line, nil)
		return nil
	}
	u.pushMu.Unlock()
	select {
	case u.msgs <- line:
		return nil
	case <-u.ended:
		return io.EOF
	}
}

// asLine makes a message one line for the relay: the transport allows
// white space between a message's tokens, even line breaks, which a stdio
// client would read as two messages; it is removed (only white space
// outside strings: the message means the same, and the relay checks these
// bytes, which are the ones the client receives).
func asLine(msg []byte) ([]byte, error) {
	msg = bytes.TrimSpace(msg)
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return nil, fmt.Errorf("%w: a message is not JSON: %w", mcpwire.ErrProtocol, err)
		}
		msg = b.Bytes()
	}
	line := make([]byte, 0, len(msg)+1)
	line = append(line, msg...)
	return append(line, '\n'), nil
}

// deliverError answers the request id with an error of the proxy's
// (errorLine, the one builder of the proxy's answers). Its error is
// deliver's: the session ended meanwhile.
func (u *httpConn) deliverError(id []byte, message string) error {
	return u.deliver(errorLine(id, codeInternalError, message, nil))
}
