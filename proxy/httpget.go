package proxy

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// startGET opens the GET stream of server-initiated messages once, after
// the client's initialized was accepted (protocols before 2026-07-28,
// which have it).
func (u *httpConn) startGET() {
	u.mu.Lock()
	modern := u.version == "" || u.version >= mcpwire.ProtocolModern
	u.mu.Unlock()
	if modern {
		return // 2026-07-28 has no GET stream
	}
	u.getOnce.Do(func() {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.getLoop()
		}()
	})
}

// getLoop reads the GET stream, and opens it again (never resumed: a
// stream is read from its start or not at all) when it ends. When it
// could not be opened, or ended without a message, getRetries times in a
// row, it is given up, and stderr says so: the server's own requests and
// notifications no longer arrive, while the client's requests go on.
func (u *httpConn) getLoop() {
	delay := u.getMin
	failures := 0
	defer func() {
		select {
		case <-u.ended:
			return // nobody reads any more
		default:
		}
		if failures >= getRetries && u.ctx.Err() == nil {
			fmt.Fprintf(u.stderr, "mcpsign proxy: the GET stream of %s could not be opened, or ended without a message, %d times in a row: given up, the server's own requests and notifications (a list_changed, say) no longer reach the client\n", textsafe.Escape(u.redacted()), getRetries)
		}
	}()
	for failures < getRetries {
		req, err := u.request(http.MethodGet, nil, nil)
		if err != nil {
			u.end(err)
			return
		}
		resp, err := u.client.Do(req)
		if err != nil {
			if u.ctx.Err() != nil {
				return
			}
			failures++
		} else {
			if err := u.checkHeaders(resp, false); err != nil {
				drain(resp)
				u.end(err)
				return
			}
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode/100 != 2 || mt != "text/event-stream" {
				// 405: the server offers no stream (others answer 404 or a
				// body that is not a stream, which clients take so too).
				// Any other error status is a failure, and said: the
				// server's own messages will not arrive.
				if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
					fmt.Fprintf(u.stderr, "mcpsign proxy: the server answered %s to the GET stream of %s: not opened, the server's own requests and notifications (a list_changed, say) will not reach the client\n",
						textsafe.Escape(statusText(resp)), textsafe.Escape(u.redacted()))
				}
				drain(resp)
				return
			}
			n, err := u.readStream(resp)
			drain(resp)
			if err != nil {
				u.end(err)
				return
			}
			if n > 0 {
				failures, delay = 0, u.getMin
			} else {
				failures++
			}
		}
		select {
		case <-u.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, u.getMax)
	}
}

// readStream reads the GET stream: server requests and notifications only
// (an answer there would answer what the proxy never saw asked on it).
// It returns how many messages it passed on.
func (u *httpConn) readStream(resp *http.Response) (int, error) {
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
