package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// Receive hands the relay the server's next message.
func (u *httpConn) Receive() ([]byte, error) {
	select {
	case line := <-u.msgs:
		return line, nil
	case <-u.ended:
		return nil, u.endErr
	}
}

// receiveTo makes handle the receiver of the server's messages in place
// of Receive (pushConn): each answer stream's reader and the GET stream's
// hand their messages to it themselves, one call at a time, so that no
// goroutine of the relay waits for them and no message changes goroutine
// on its way (docs/PERFORMANCE.md, "HTTP front"). handle(nil, err) is the
// last call, once the session ended. Called before the first Send.
func (u *httpConn) receiveTo(handle func(line []byte, err error)) {
	u.pushMu.Lock()
	u.push = handle
	u.pushMu.Unlock()
	u.pushing.Store(true)
	select {
	case <-u.ended:
		go u.pushEnd()
	default:
	}
}

// pushEnd gives the relay's handler the session's end, once.
func (u *httpConn) pushEnd() {
	u.pushMu.Lock()
	defer u.pushMu.Unlock()
	if u.push == nil || u.pushEnded {
		return
	}
	u.pushEnded = true
	u.endMu.Lock()
	err := u.endErr
	u.endMu.Unlock()
	u.push(nil, err)
}

// end ends the session with err (io.EOF: cleanly); the first call wins.
func (u *httpConn) end(err error) {
	u.endMu.Lock()
	defer u.endMu.Unlock()
	select {
	case <-u.ended:
		return
	default:
	}
	if err == nil || u.clientLeft.Load() && isNotFound(err) {
		// A 404 once the client left and the DELETE went out (the GET
		// stream opened again, a POST under way) is the server having
		// done as asked, before the DELETE's own answer came back: the
		// session ended cleanly, not by the server's doing.
		err = io.EOF
	}
	u.endErr = err
	close(u.ended)
	if u.pushing.Load() {
		// On a goroutine of its own: end may be called from within the
		// handler (a Send that failed), which holds pushMu.
		go u.pushEnd()
	}
}

// isNotFound reports whether err is the server's 404 of the session.
func isNotFound(err error) bool {
	var ce *ConnectError
	return errors.As(err, &ce) && ce.Status == http.StatusNotFound
}

// fail ends the session with err, unless it ended already, and returns
// why it ended (the first end wins: a timeout that cancelled a POST, say,
// not the cancellation).
func (u *httpConn) fail(err error) error {
	u.end(err)
	u.endMu.Lock()
	defer u.endMu.Unlock()
	return u.endErr
}

// CloseInput ends the session because the client left: the server is told
// (DELETE of the session), and the relay reads the end.
func (u *httpConn) CloseInput() {
	u.clientLeft.Store(true)
	u.sendDelete(u.grace)
	u.end(io.EOF)
}

// sendDelete ends the server's session, if it made one, once.
func (u *httpConn) sendDelete(grace time.Duration) {
	u.closeOnce.Do(func() {
		if u.sessions.ID() == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		req, err := u.request(http.MethodDelete, nil, nil)
		if err != nil {
			return
		}
		req = req.WithContext(ctx)
		if resp, err := u.client.Do(req); err == nil {
			drain(resp)
		}
	})
}

// Stop ends the session at once: the server is told (DELETE), every
// request under way is cancelled, and its readers are waited for (at most
// grace).
func (u *httpConn) Stop(grace time.Duration) {
	u.end(io.EOF)
	u.sendDelete(grace)
	u.cancel()
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

// Wait waits up to d for the session to end.
func (u *httpConn) Wait(d time.Duration) bool {
	select {
	case <-u.ended:
		return true
	case <-time.After(d):
		return false
	}
}

// Exit says how the session ended: cleanly (io.EOF), or why not.
func (u *httpConn) Exit() (status string, clean bool) {
	select {
	case <-u.ended:
	default:
		return "still running", false
	}
	if errors.Is(u.endErr, io.EOF) {
		return "session ended", true
	}
	return u.endErr.Error(), false
}

// drain reads a little of a body and closes it, so that the connection
// can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrBody))
	resp.Body.Close()
}
