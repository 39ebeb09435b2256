package proxy

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestDiscoverParams: the proxy's own server/discover asks for the
// client's protocol version when it is of the 2026-07-28 generation or
// later, and for 2026-07-28 otherwise (no _meta, no version, an older one).
func TestDiscoverParams(t *testing.T) {
	for _, tc := range []struct {
		meta, want string
	}{
		{"", mcpwire.ProtocolModern},
		{`{}`, mcpwire.ProtocolModern},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, mcpwire.ProtocolModern},
		{`{"io.modelcontextprotocol/protocolVersion":"` + mcpwire.ProtocolModern + `"}`, mcpwire.ProtocolModern},
		{`{"io.modelcontextprotocol/protocolVersion":"2027-01-15"}`, "2027-01-15"},
	} {
		var meta []byte
		if tc.meta != "" {
			meta = []byte(tc.meta)
		}
		params, err := discoverParams(meta)
		if err != nil {
			t.Fatalf("%s: %v", tc.meta, err)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := json.Unmarshal(p.Meta[mcpwire.MetaProtocolVersion], &got); err != nil || got != tc.want {
			t.Errorf("%s: the version asked for is %s (%v), want %s", tc.meta, p.Meta[mcpwire.MetaProtocolVersion], err, tc.want)
		}
	}
}

// TestApprovedOnlyByAnUpdate: a list result the policy allows without an
// update (Decision.Updated) passes, but does not become the approved set:
// the same result is checked again the next time, whereas the start-up
// listing's approval holds. The server answers the proxy's own listing
// honestly and every later tools/list with the rug-pull tools.
func TestApprovedOnlyByAnUpdate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var calls atomic.Int32
	policy := PolicyFunc(func(context.Context, *digest.Snapshot) (*Decision, error) {
		calls.Add(1)
		return &Decision{Allow: true}, nil
	})
	s := startProxy(t, policy, exampleArgv(t, fixtures.ModeHonestProbe), nil)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	for i := range 2 {
		if got := toolNamesOf(t, ctx, cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
			t.Fatalf("tools/list %d: %v", i, got)
		}
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the policy was called %d times, want 3 (the start-up listing, each list result)", n)
	}
}
