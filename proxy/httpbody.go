package proxy

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcpsign/mcpsign/mcpwire"
)

// readAnswer reads the answer body to the posted request, through mcpwire
// (docs/PROXY.md, "Remote servers"): application/json (one message, the
// answer) or text/event-stream, in which requests and notifications before
// the answer reach the relay as they come, the answer must carry the
// request's id byte for byte, only notifications may follow it, and the
// answer and what follows are released when the stream ended cleanly.
// The answer to initialize also gives the protocol version that later
// requests' header carries.
func (u *httpUpstream) readAnswer(resp *http.Response, posted []byte, m *mcpwire.Message) error {
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
func (u *httpUpstream) errorBody(resp *http.Response, posted []byte) bool {
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
func (u *httpUpstream) learnVersion(msg []byte) {
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

// readStream reads the GET stream: server requests and notifications only
// (an answer there would answer what the proxy never saw asked on it).
// It returns how many messages it passed on.
func (u *httpUpstream) readStream(resp *http.Response) (int, error) {
	n := 0
	_, err := mcpwire.ReadResponse(u.ctx, mcpwire.BodyEventStream, resp.Body, mcpwire.NewGetCheck(),
		mcpwire.ResponseOptions{MaxMessageBytes: u.max, MaxBodyBytes: -1}, func(msg []byte) error {
			n++
			return u.deliver(msg)
		})
	if err != nil {
		err = u.readError(err)
		if ce := (*ConnectError)(nil); errors.As(err, &ce) {
			return n, nil // the stream broke: it is opened again
		}
	}
	return n, err
}

// readError is the error of a body that could not be read: a protocol
// violation or an oversized message as it is (the session is blocked), the
// end of the session as io.EOF, anything else a broken connection.
func (u *httpUpstream) readError(err error) error {
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
