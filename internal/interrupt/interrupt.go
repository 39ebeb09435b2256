// Package interrupt cancels a context on the first SIGINT or SIGTERM, with
// a cause people read ("interrupted: SIGTERM received"), and gives the next
// signal its default effect.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Error is the cause of a context canceled by a signal.
type Error struct {
	Signal os.Signal
}

// Error says which signal ended the command: "interrupted: SIGINT
// received", "interrupted: SIGTERM received".
func (e *Error) Error() string {
	return "interrupted: " + Name(e.Signal) + " received"
}

// Name is the conventional name of sig: SIGINT, SIGTERM, else as Go
// prints it.
func Name(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Notify calls cancel with an *Error on the first SIGINT or SIGTERM
// received until stop is called; after that signal, the next one has its
// default effect (it ends the process even if what was canceled is slow to
// finish). stop may be called more than once.
func Notify(cancel context.CancelCauseFunc) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(&Error{Signal: sig})
		case <-done:
		}
	}()
	var stopped bool
	return func() {
		if !stopped {
			stopped = true
			signal.Stop(ch)
			close(done)
		}
	}
}
