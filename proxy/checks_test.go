package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
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
