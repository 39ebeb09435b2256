package source

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHTTPListing lists one go-sdk server over Streamable HTTP (200
// tools, 200 prompts, a resource template): mcpsign's listing, every
// response read whole and strictly before go-sdk decodes it, the server's
// own stream opened and read as strictly (docs/REMOTE.md), against go-sdk's
// own client with its defaults listing the same server in the same run,
// the peer.
func BenchmarkHTTPListing(b *testing.B) {
	url := sdkHTTP(b, 200, nil, nil)
	b.Run("mcpsign", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(context.Background(), Spec{URL: url}, Options{ProtocolVersion: ProtocolLegacy}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
		for b.Loop() {
			ctx := context.Background()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, err := range cs.Tools(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, err := range cs.Prompts(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, err := range cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
			}
			cs.Close()
		}
	})
}
