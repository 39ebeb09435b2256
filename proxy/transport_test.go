package proxy

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// TestTransportConn drives the connection of a TransportUpstream against
// the other end of an in-memory transport: what the server writes arrives
// as one line the relay reads strictly, its params and results as the
// server wrote them; a message over the cap, the server leaving and a Stop
// each end the connection as UpstreamConn says.
func TestTransportConn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		server func(ctx context.Context, c mcp.Connection) // what the server's end does
		stop   bool                                        // the proxy stops the connection first
		line   string                                      // the line Receive returns first ("": none)
		err    error                                       // then the error of Receive
		clean  bool                                        // Exit's clean
	}{
		{name: "a result passes as written", server: func(ctx context.Context, c mcp.Connection) {
			id, _ := jsonrpc.MakeID("mcpsign-1")
			c.Write(ctx, &jsonrpc.Response{ID: id, Result: []byte(`{"tools":[{"name":"a","description":"<b>\u00e9</b>"}]}`)})
			c.Close()
		}, line: `{"jsonrpc":"2.0","id":"mcpsign-1","result":{"tools":[{"name":"a","description":"<b>\u00e9</b>"}]}}` + "\n", err: io.EOF, clean: true},
		{name: "a message over the cap", server: func(ctx context.Context, c mcp.Connection) {
			c.Write(ctx, &jsonrpc.Request{Method: "notifications/message", Params: []byte(`{"data":"` + strings.Repeat("x", 300) + `"}`)})
		}, err: mcpwire.ErrMessageTooLarge},
		{name: "a message of the cap, inclusive", server: func(ctx context.Context, c mcp.Connection) {
			c.Write(ctx, &jsonrpc.Request{Method: "notifications/message", Params: []byte(`{"data":"` + strings.Repeat("x", 185) + `"}`)})
			c.Close()
		}, line: `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 185) + `"}}` + "\n", err: io.EOF, clean: true},
		{name: "the server leaves", server: func(_ context.Context, c mcp.Connection) { c.Close() }, err: io.EOF, clean: true},
		{name: "the proxy stops", server: func(context.Context, mcp.Connection) {}, stop: true, err: io.EOF, clean: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			serverEnd, proxyEnd := mcp.NewInMemoryTransports()
			conn, err := TransportUpstream(proxyEnd).Connect(ctx, UpstreamEnv{MaxMessageBytes: 256, Stderr: io.Discard, Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Stop(time.Second)
			sc, err := serverEnd.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			go tc.server(ctx, sc)
			if tc.stop {
				conn.Stop(time.Second)
			}
			if tc.line != "" {
				line, err := conn.Receive()
				if err != nil || string(line) != tc.line {
					t.Fatalf("Receive = %q, %v; want %q", line, err, tc.line)
				}
				if _, err := mcpwire.ParseFromServer(mcpwire.Content(line)); err != nil {
					t.Errorf("the line does not read strictly: %v", err)
				}
			}
			if _, err := conn.Receive(); !errors.Is(err, tc.err) {
				t.Fatalf("Receive error %v, want %v", err, tc.err)
			}
			if !conn.Wait(time.Second) {
				t.Fatal("the connection did not end")
			}
			if status, clean := conn.Exit(); clean != tc.clean {
				t.Errorf("Exit = %q, %v; want clean %v", status, clean, tc.clean)
			}
		})
	}
}
