package proxy

import (
	"bytes"
	"errors"
	"io"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// How messages enter the relay: a reader goroutine per peer that reads
// lines (read, goRead), an upstream that hands them over on its own
// readers (pushConn), or, for a ContextLineSource client of such an
// upstream, run's own goroutine (readHere); either way each line is parsed and handled under the
// relay's lock by handle (docs/PROXY.md, "Lifetimes").
// read reads one peer's lines (next returns them one at a time) and
// handles each under the lock, on this goroutine, then writes what the
// handling queued.
func (r *relay) read(next func() ([]byte, error), server bool) {
	for {
		line, err := next()
		if !r.handle(line, err, server) {
			return
		}
	}
}

// handle handles one line read from a peer, or the peer's end (err), and
// reports whether more may follow. Calls for one peer come one at a time.
func (r *relay) handle(line []byte, err error, server bool) bool {
	if r.ended.Load() {
		return false // run returned: nothing more is handled
	}
	if err != nil {
		r.mu.Lock()
		if r.ended.Load() {
			r.mu.Unlock()
			return false
		}
		if server {
			r.serverEOF, r.serverErr = true, err
			r.closeOwn(serverGone(err))
			var ce *ConnectError
			// A protocol violation (a remote server's stream, say) blocks
			// at once, even while a check runs: the check would only
			// see the server gone.
			violation := errors.Is(err, mcpwire.ErrProtocol) || errors.Is(err, mcpwire.ErrMessageTooLarge)
			if r.blocked == nil && (r.running == nil || violation) && !errors.Is(err, io.EOF) && !errors.As(err, &ce) {
				// An oversized or unreadable message: what it said cannot
				// be checked, so nothing more of the session is trusted.
				r.block(&BlockedError{What: "a message from the server", Err: err})
			}
		} else {
			r.clientEOF = true
		}
		r.mu.Unlock()
		r.flush()
		r.signal()
		return false
	}
	m := &inbound{line: line}
	body := mcpwire.Content(line)
	if len(bytes.TrimSpace(body)) == 0 {
		m.blank = true
	} else {
		if server {
			m.env, m.perr = mcpwire.ParseFromServer(body)
			if m.perr == nil {
				m.perr = mcpwire.CheckFraming(line)
			}
		} else {
			m.env, m.perr = mcpwire.Parse(body)
		}
	}
	if server && m.perr == nil && !m.blank && r.deliverOwn(&m.env) {
		return true
	}
	r.mu.Lock()
	if r.ended.Load() {
		r.mu.Unlock()
		return false
	}
	if server {
		r.fromServer(m)
	} else {
		r.fromClient(m)
	}
	r.mu.Unlock()
	r.flush()
	return true
}

// pushConn is an UpstreamConn that hands the relay each message on the
// goroutine that read it, in place of Receive (an HTTP upstream, whose
// answer streams each have a reader already): handle is called one call
// at a time, and handle(nil, err) last, once.
type pushConn interface {
	receiveTo(handle func(line []byte, err error))
}

// goPushed makes the relay the receiver of a pushConn; the channel is
// closed once it was given the end.
func (r *relay) goPushed(c pushConn) <-chan struct{} {
	done := make(chan struct{})
	c.receiveTo(func(line []byte, err error) {
		r.handle(line, err, true)
		if err != nil {
			close(done)
		}
	})
	return done
}

// goRead runs read on a goroutine of its own; the channel is closed when it
// returned.
func (r *relay) goRead(next func() ([]byte, error), server bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.read(next, server)
	}()
	return done
}
