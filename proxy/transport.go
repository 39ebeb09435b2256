package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// TransportUpstream is a server reached through a go-sdk transport: an
// in-process server (one end of mcp.NewInMemoryTransports, the other given
// to the mcp.Server's Connect), so that a Go host enforces a lock on a
// server it runs itself, or any other mcp.Transport of a client.
//
// The transport hands over decoded messages, not bytes: each one the server
// sends is encoded again with jsonrpc.EncodeMessage, and those bytes are
// what the proxy checks and the client receives. The params, result and
// error data of a message are raw JSON in go-sdk, passed through as they
// are (white space between tokens removed), so the definitions in a
// listing are the server's bytes; the envelope is go-sdk's. An id the
// encoding changes (1.0 read as 1, a string with escapes) no longer
// matches the request's byte for byte, and the session is blocked, as for
// any answer to nothing pending. Each client message is decoded with
// jsonrpc.DecodeMessage after the proxy read it strictly.
func TransportUpstream(t mcp.Transport) Upstream { return transportUpstream{t} }

type transportUpstream struct{ t mcp.Transport }

// Connect connects the transport.
func (u transportUpstream) Connect(ctx context.Context, env UpstreamEnv) (UpstreamConn, error) {
	if u.t == nil {
		return nil, errors.New("proxy: no transport given")
	}
	conn, err := u.t.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to the server: %w", err)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &transportConn{conn: conn, max: env.MaxMessageBytes, ctx: cctx, cancel: cancel, ended: make(chan struct{})}, nil
}

// transportConn is one connection of a TransportUpstream.
type transportConn struct {
	conn   mcp.Connection
	max    int
	ctx    context.Context // of every Read and Write; cancelled by Stop
	cancel context.CancelFunc

	endOnce sync.Once
	ended   chan struct{} // closed by end
	endErr  error         // io.EOF when the connection ended cleanly
	closing sync.Once
}

// Send decodes one line and writes it to the connection.
func (c *transportConn) Send(line []byte) error {
	body := bytes.TrimSpace(mcpwire.Content(line))
	if len(body) == 0 {
		return nil // nothing to send, as a stdio server reads a blank line
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		err = fmt.Errorf("a message for the server could not be decoded: %w", err)
		c.end(err)
		return err
	}
	if err := c.conn.Write(c.ctx, msg); err != nil {
		c.end(err)
		return fmt.Errorf("writing to the server: %w", err)
	}
	return nil
}

// Receive reads the server's next message and encodes it as one line.
func (c *transportConn) Receive() ([]byte, error) {
	msg, err := c.conn.Read(c.ctx)
	if err != nil {
		c.end(err)
		return nil, c.endErr
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		c.end(fmt.Errorf("%w: %w", mcpwire.ErrProtocol, err))
		return nil, c.endErr
	}
	if c.max > 0 && len(b) > c.max {
		c.end(fmt.Errorf("%w: a message of %d bytes (at most %d)", mcpwire.ErrMessageTooLarge, len(b), c.max))
		return nil, c.endErr
	}
	return append(b, '\n'), nil
}

// end records why the connection ended (the first reason wins) and closes
// it. A read that ends because the connection was closed, by either side,
// ends it cleanly.
func (c *transportConn) end(err error) {
	c.endOnce.Do(func() {
		if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, io.ErrClosedPipe) || c.ctx.Err() != nil {
			err = io.EOF
		}
		c.endErr = err
		close(c.ended)
	})
	c.close()
}

func (c *transportConn) close() { c.closing.Do(func() { c.conn.Close() }) }

// CloseInput closes the connection: the server sees the client leave.
func (c *transportConn) CloseInput() { c.close() }

// Stop closes the connection and cancels its reads and writes.
func (c *transportConn) Stop(time.Duration) {
	c.cancel()
	c.end(io.EOF)
}

// Wait waits up to d for the connection to end.
func (c *transportConn) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ended:
		return true
	case <-t.C:
		return false
	}
}

// Exit says how the connection ended.
func (c *transportConn) Exit() (status string, clean bool) {
	select {
	case <-c.ended:
	default:
		return "still running", false
	}
	if errors.Is(c.endErr, io.EOF) {
		return "session ended", true
	}
	return c.endErr.Error(), false
}
