package oauth_test

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/oauth"
)

// A Go host that reads a remote MCP server behind OAuth: sign in first
// (the browser, once; later runs take the cached token), then hand the
// transport's client to whatever speaks to the server.
func ExampleNew() {
	ctx := context.Background()
	t, err := oauth.New(oauth.Options{
		ServerURL: "https://mcp.example.com/mcp",
		Open:      oauth.OpenBrowser,
		Stderr:    os.Stderr,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := t.Authorize(ctx); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "https://mcp.example.com/mcp",
		HTTPClient: t.Client(),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
}
