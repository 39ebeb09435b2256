package proxy

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/rawio"
)

// Upstream is the server's side of a session. Run relays the client's
// messages to the connection Connect returns and the server's messages
// from it, and checks them the same way whatever the server is: a child
// process on its stdio ([CommandUpstream]), a Streamable HTTP endpoint
// ([HTTPUpstream]), a go-sdk transport such as an in-process server
// ([TransportUpstream]), or a host's own implementation.
type Upstream interface {
	// Connect starts the server's side (starts a process, prepares an HTTP
	// session, connects a transport) and returns the connection to it.
	// Run calls it once per session, before it reads the client. ctx
	// bounds the start only: the connection lasts until its Stop.
	Connect(ctx context.Context, env UpstreamEnv) (UpstreamConn, error)
}

// UpstreamEnv is what Run tells an [Upstream] when it connects: the parts
// of its [Options] that concern the server's side, defaults applied.
type UpstreamEnv struct {
	// Stderr receives the server's stderr and the connection's own
	// notices, each line escaped by the connection (internal/textsafe):
	// every server string is hostile when printed. Never nil.
	Stderr io.Writer
	// MaxMessageBytes caps one message from the server
	// (Options.MaxMessageBytes).
	MaxMessageBytes int
	// Timeout bounds the wait for the server to accept one message
	// (Options.CheckTimeout).
	Timeout time.Duration
	// Grace is how long the server gets to end (Options.ShutdownGrace).
	Grace time.Duration
}

// UpstreamConn is one connection to a server, as Run uses it. Run calls
// Send from one goroutine at a time and Receive from one other goroutine;
// CloseInput, Stop, Wait and Exit may be called from any goroutine,
// concurrently with them.
type UpstreamConn interface {
	// Send sends one message to the server: line is one JSON-RPC message
	// the proxy read strictly (or a blank line), and its line end, in the
	// order the proxy decided to send them. An error ends the session:
	// nothing more is sent.
	Send(line []byte) error
	// Receive returns the server's next message as one line, line end
	// included: exactly the bytes the proxy checks and the client
	// receives. It returns io.EOF when the server ended its side cleanly,
	// an error wrapping mcpwire.ErrMessageTooLarge for a message over
	// UpstreamEnv.MaxMessageBytes, and one wrapping mcpwire.ErrProtocol
	// for what is not a message; any error ends the server's side. A
	// *ConnectError ends the session as a server that could not be used;
	// any other error but io.EOF blocks it.
	Receive() ([]byte, error)
	// CloseInput tells the server the client is gone, once everything
	// sent was sent: a stdio server's stdin is closed, an HTTP session
	// deleted, a transport's connection closed.
	CloseInput()
	// Stop ends the server's side at once and for good, within about
	// grace. It is idempotent and returns once nothing of it runs any
	// more.
	Stop(grace time.Duration)
	// Wait waits up to d for the server's side to end by itself, and
	// reports whether it has.
	Wait(d time.Duration) bool
	// Exit reports how the server's side ended: clean when without
	// failure, and status for people ("exit status 1", "session ended";
	// "still running" before it ended).
	Exit() (status string, clean bool)
}

// CommandOptions configure a [CommandUpstream].
type CommandOptions struct {
	// Env is added to the inherited environment of the server
	// ("NAME=value"; a later entry wins).
	Env []string
	// Dir is its working directory ("" is ours).
	Dir string
}

// CommandUpstream is the server run as a child process, spoken to over its
// stdio (the MCP stdio transport): started in a process group of its own,
// its stderr copied to UpstreamEnv.Stderr escaped, and stopped as the MCP
// specification asks (stdin closed, then SIGTERM, then SIGKILL, to the
// whole group).
func CommandUpstream(argv []string, o CommandOptions) Upstream {
	return commandUpstream{argv: argv, o: o}
}

type commandUpstream struct {
	argv []string
	o    CommandOptions
}

// errNoCommand is the error of an empty server command.
var errNoCommand = errors.New("proxy: no server command given")

func (u commandUpstream) Connect(_ context.Context, env UpstreamEnv) (UpstreamConn, error) {
	if len(u.argv) == 0 {
		return nil, errNoCommand
	}
	return startChild(u.argv, u.o.Env, u.o.Dir, env.Stderr, env.MaxMessageBytes)
}

// Send writes one line to the server's stdin, by raw system calls when the
// pipe is in the poller (internal/rawio).
func (c *child) Send(line []byte) error {
	_, err := c.input.Write(line)
	return err
}

// Receive reads the server's next line from its stdout.
func (c *child) Receive() ([]byte, error) {
	if c.lines == nil {
		c.lines = mcpwire.NewLineReader(rawio.Reader(c.stdout), c.maxMessage)
	}
	return c.lines.Next()
}

// CloseInput closes the server's stdin: the MCP way to ask a stdio server
// to exit.
func (c *child) CloseInput() { c.closeStdin() }

// upstreamOf is the upstream Options select: Upstream, or the one Command
// or URL build (one code path for all).
func upstreamOf(o *Options) (Upstream, error) {
	n := 0
	for _, set := range []bool{o.Upstream != nil, len(o.Command) > 0, o.URL != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, errors.New("proxy: more than one of a server command, a URL and an Upstream given")
	case o.Upstream != nil:
		if len(o.Header) > 0 || o.HTTPClient != nil || o.AllowInsecureHTTP || len(o.Env) > 0 || o.Dir != "" {
			// They would be ignored: the upstream was made with its own.
			return nil, errors.New("proxy: Options.Header, HTTPClient, AllowInsecureHTTP, Env and Dir apply to Command and URL; give them to the Upstream's constructor")
		}
		return o.Upstream, nil
	case o.URL != "":
		return HTTPUpstream(o.URL, HTTPOptions{Client: o.HTTPClient, Header: o.Header, AllowInsecureHTTP: o.AllowInsecureHTTP})
	case len(o.Command) == 0:
		return nil, errNoCommand
	}
	return CommandUpstream(o.Command, CommandOptions{Env: o.Env, Dir: o.Dir}), nil
}

// connWriter is an UpstreamConn as the io.Writer of the relay's queue to
// the server.
type connWriter struct{ c UpstreamConn }

func (w connWriter) Write(line []byte) (int, error) {
	if err := w.c.Send(line); err != nil {
		return 0, err
	}
	return len(line), nil
}
