//go:build unix

package proxy

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestBridgeEverythingHTTP runs the bridge in front of an official npm
// server that serves Streamable HTTP itself (server-everything in its
// streamableHttp mode), with go-sdk as the stdio client: the start-up
// listing over HTTP matches the lock, and a call goes through.
func TestBridgeEverythingHTTP(t *testing.T) {
	t.Parallel()
	node, entry := fixtures.NPMServer(t, "server-everything")
	url := fixtures.StartEverythingHTTP(t, node, entry)
	lock := httpLock(t, url)
	s := startBridge(t, lockPolicy(t, lock, LockOptions{}), url, nil)
	ctx := e2eContext(t)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	if _, err := cs.CallTool(ctx, &mcpCallEcho); err != nil {
		t.Fatalf("echo: %v", err)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v\n%s", err, s.stderr.String())
	}
}

var mcpCallEcho = mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
