package proxy

// How a session's goroutines end (docs/PROXY.md, "Lifetimes"): the client
// read on run's own goroutine when the upstream pushes its messages, and
// what run waits for before it returns.

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// isPushed reports whether the upstream hands the relay its messages on
// its own readers (pushConn: an HTTP upstream), whose writes are bounded
// (a POST's answer is read on a goroutine of its own, a notification's
// acceptance within CheckTimeout).
func (r *relay) isPushed() bool {
	_, ok := r.c.(pushConn)
	return ok
}

// readHere reads the client on run's own goroutine until the client's side
// ends (a [ContextLineSource] of an upstream that pushes its messages): an
// idle session then holds no goroutine for the client's side besides
// run's. What run's loop waits for (a signal, ctx's end) ends the read
// under way (signal ends its context), and is looked at as run's loop
// does (look). done reports that the session ended, with err; otherwise the
// client's side ended and run's loop goes on.
func (r *relay) readHere(ctx context.Context, src ContextLineSource) (done bool, err error) {
	defer func() {
		r.wakeMu.Lock()
		if r.wakeCancel != nil {
			r.wakeCancel()
			r.wakeCancel = nil
		}
		r.wakeMu.Unlock()
	}()
	var wctx context.Context
	for {
		if ctx.Err() != nil {
			return true, r.interrupt(ctx)
		}
		select {
		case <-r.wake:
			if done, err := r.look(); done {
				return true, err
			}
		default:
		}
		r.wakeMu.Lock()
		if wctx == nil || wctx.Err() != nil {
			wctx, r.wakeCancel = context.WithCancel(ctx)
		}
		rctx := wctx
		// A signal sent before this context was in place did not end it:
		// its wake is looked at first.
		signalled := len(r.wake) > 0
		r.wakeMu.Unlock()
		if signalled {
			continue
		}
		line, err := src.NextLineContext(rctx)
		if err != nil && rctx.Err() != nil {
			continue // woken
		}
		if err == nil && len(mcpwire.Content(line)) > r.o.MaxMessageBytes {
			err = fmt.Errorf("%w: a message has more than %d bytes", mcpwire.ErrMessageTooLarge, r.o.MaxMessageBytes)
		}
		if !r.handle(line, err, false) {
			return false, nil // the client's side ended
		}
	}
}

// readDeadliner is an input whose blocked read a deadline ends.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// end ends the session's state before run returns (docs/PROXY.md,
// "Lifetimes"): from now on nothing a reader, a check or a timer finds is
// handled, the session's context is cancelled, the checks still running
// are waited for (at most CheckTimeout, their own bound), and so is the
// server's reader (at most ShutdownGrace: the server was stopped).
//
// The client's reader is waited for (at most ShutdownGrace) when the
// client's side ended, or when its input takes a read deadline: one in the
// past wakes it, and the deadline is cleared once it returned, so that the
// host may read its input again. An input that takes none (an io.Pipe)
// cannot be woken: a reader blocked in a read of a client that stays
// connected is not waited for, so that Run still returns at once; that
// goroutine returns with the client's next read (a line, the end), hands
// nothing on, and what it read is lost.
func (r *relay) end(cancel context.CancelFunc, clientDone, serverDone <-chan struct{}) {
	r.mu.Lock()
	r.ended.Store(true)
	if r.handshakeTimer != nil {
		r.handshakeTimer.Stop()
	}
	r.handshakeGen++ // a callback already waiting for mu does nothing
	clientEOF := r.clientEOF
	r.mu.Unlock()
	cancel()
	waitFor(r.tasks.Wait, r.o.CheckTimeout)
	waitFor(func() { <-serverDone }, r.o.ShutdownGrace)
	woken := false
	if d := r.clientDeadline; d != nil && !clientEOF {
		woken = d.SetReadDeadline(time.Now()) == nil
	}
	if clientEOF || woken {
		waitFor(func() { <-clientDone }, r.o.ShutdownGrace)
	}
	if woken {
		_ = r.clientDeadline.SetReadDeadline(time.Time{}) // the host's input as it was
	}
}

// waitFor calls wait and returns when it returned, or after d.
func waitFor(wait func(), d time.Duration) {
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
