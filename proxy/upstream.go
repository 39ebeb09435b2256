package proxy

import (
	"io"
	"time"

	"github.com/mcpsign/mcpsign/internal/rawio"
	"github.com/mcpsign/mcpsign/mcpwire"
)

// upstream is the server's side of a relay: a child process spoken to over
// its stdio (child), or a Streamable HTTP endpoint (httpUpstream). The
// relay does not care which: it writes each client message to input as one
// Write of one line, reads the server's messages one line each from next,
// and checks and routes them the same way for both.
type upstream interface {
	// input is where the relay writes the messages for the server, one
	// line a Write, in the order it decided to send them.
	input() io.Writer
	// next returns the server's next message as one line, line end
	// included; io.EOF when the server ended its side.
	next() ([]byte, error)
	// closeInput tells the server the client is gone, once everything
	// written was sent: a stdio server's stdin is closed, an HTTP session
	// deleted.
	closeInput()
	// stop ends the server's side at once and for good (idempotent),
	// within about grace; it returns once nothing of it runs any more.
	stop(grace time.Duration)
	// waitExit waits up to d for the server's side to end by itself.
	waitExit(d time.Duration) bool
	// exitedCleanly reports whether it ended without failure.
	exitedCleanly() bool
	// status describes how it ended.
	status() string
}

func (c *child) input() io.Writer { return rawio.Writer(c.stdin) }

func (c *child) next() ([]byte, error) {
	if c.lines == nil {
		c.lines = mcpwire.NewLineReader(rawio.Reader(c.stdout), c.maxMessage)
	}
	return c.lines.Next()
}

func (c *child) closeInput() { c.closeStdin() }
