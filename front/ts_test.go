package front_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// tsHoldings is what the TypeScript clients (testdata/npm/tsclient.mjs,
// tsclient2.mjs) report they hold.
type tsHoldings struct {
	ProtocolVersion string                  `json:"protocolVersion"`
	Tools           []struct{ Name string } `json:"tools"`
	Error           *string                 `json:"error"`
	Errors          []struct {
		Method, Message string
	} `json:"errors"`
	Calls []struct {
		Name string
		OK   bool
	} `json:"calls"`
}

func (h *tsHoldings) toolNames() []string {
	var names []string
	for _, tl := range h.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// tsClient2 runs the TypeScript SDK v2 client (@modelcontextprotocol/client)
// on cfg.
func tsClient2(t *testing.T, cfg map[string]any) *tsHoldings {
	t.Helper()
	out := fixtures.TSClient2Session(t, cfg, 60*time.Second)
	var h tsHoldings
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("TypeScript SDK v2 client output %q: %v", out, err)
	}
	return &h
}

// tsClient1 runs the TypeScript SDK v1 client (StreamableHTTPClientTransport)
// on cfg.
func tsClient1(t *testing.T, cfg map[string]any) *tsHoldings {
	t.Helper()
	out := fixtures.TSClientSession(t, cfg, 60*time.Second)
	var h tsHoldings
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("TypeScript SDK v1 client output %q: %v", out, err)
	}
	return &h
}

// TestTypeScriptClients: the official TypeScript SDK's clients, v1
// (StreamableHTTPClientTransport) and v2 (@modelcontextprotocol/client, in
// its legacy and its auto version negotiation: server/discover first),
// through the front to the example server over stdio and over HTTP: an
// honest server's tools reach them exactly; a rug pull reaches none of
// them.
func TestTypeScriptClients(t *testing.T) {
	t.Parallel() // node processes: it waits on them, with the other tests that do
	for _, up := range upstreams {
		honest := up(t, fixtures.ModeHonest)
		lock := lockOf(t, honest)
		for _, mode := range []string{fixtures.ModeHonest, fixtures.ModeRugPull} {
			u := honest
			if mode != fixtures.ModeHonest {
				u = up(t, mode)
			}
			s := serve(t, u, lock, nil)
			check := func(t *testing.T, h *tsHoldings, failed bool) {
				t.Helper()
				names := h.toolNames()
				switch {
				case mode == fixtures.ModeHonest && (failed || !slices.Equal(names, fixtures.HonestToolNames())):
					t.Errorf("honest server: tools %v, error %v %v", names, h.Error, h.Errors)
				case mode != fixtures.ModeHonest && len(names) != 0:
					t.Errorf("%s: the client received tools %v", mode, names)
				}
			}
			t.Run(u.name+"/"+mode+"/v1", func(t *testing.T) {
				t.Parallel()
				h := tsClient1(t, map[string]any{"url": s.url, "call": map[string]any{"name": "search_notes", "arguments": map[string]any{"query": "x"}}, "timeoutMs": 10000})
				check(t, h, len(h.Errors) > 0)
				if mode != fixtures.ModeHonest && !strings.Contains(errorsText(h), "blocked by mcpsign") {
					t.Errorf("%s: the v1 client was not told of the block: %+v", mode, h.Errors)
				}
			})
			for _, negotiation := range []string{"legacy", "auto"} {
				t.Run(u.name+"/"+mode+"/v2-"+negotiation, func(t *testing.T) {
					t.Parallel()
					h := tsClient2(t, map[string]any{"url": s.url, "mode": negotiation, "timeoutMs": 10000})
					check(t, h, h.Error != nil)
					if mode == fixtures.ModeHonest && negotiation == "auto" && u.name != "http" && h.ProtocolVersion != "2026-07-28" {
						t.Errorf("auto negotiation through the front reached %s, want 2026-07-28 (stateless)", h.ProtocolVersion)
					}
					if mode != fixtures.ModeHonest && (h.Error == nil || !strings.Contains(*h.Error, "blocked by mcpsign")) {
						t.Errorf("%s: the v2 client was not told of the block: %v", mode, h.Error)
					}
				})
			}
		}
	}
}

func errorsText(h *tsHoldings) string {
	var b strings.Builder
	for _, e := range h.Errors {
		b.WriteString(e.Method + ": " + e.Message + "\n")
	}
	if h.Error != nil {
		b.WriteString(*h.Error)
	}
	return b.String()
}

// TestServerEverything: the official server-everything (TypeScript SDK)
// over stdio behind the front, reached by go-sdk's client in a session:
// its tools arrive exactly as pinned, and a call is answered.
func TestServerEverything(t *testing.T) {
	t.Parallel() // node processes, as TestTypeScriptClients
	node, entry := fixtures.NPMServer(t, "server-everything")
	u := upstream{name: "everything", command: []string{node, entry, "stdio"}}
	_, ctx, cs := sessionOf(t, u)
	names := toolNames(t, ctx, cs)
	if !slices.Contains(names, "echo") {
		t.Fatalf("tools %v: no echo", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through the front"}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
}
