package proxy

import (
	"encoding/json"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/mcpwire"
)

// initializeCapabilities returns the client capabilities of initialize
// params (their "capabilities" member) in RFC 8785 form: {} when the client
// sent none, nil when they cannot be read strictly or are not an object.
func initializeCapabilities(params []byte) json.RawMessage {
	return capabilitiesMember(params, "capabilities")
}

// metaCapabilities returns the client capabilities of a 2026-07-28 request
// _meta (io.modelcontextprotocol/clientCapabilities) as
// initializeCapabilities does; a missing _meta announces none ({}), as the
// proxy's own requests then say (mcpwire.RequestMeta).
func metaCapabilities(meta []byte) json.RawMessage {
	if meta == nil {
		return json.RawMessage(`{}`)
	}
	return capabilitiesMember(meta, mcpwire.MetaClientCapabilities)
}

func capabilitiesMember(obj []byte, name string) json.RawMessage {
	if len(obj) == 0 || string(obj) == "null" {
		return json.RawMessage(`{}`)
	}
	m, err := digest.ReadMembers(obj, name)
	if err != nil {
		return nil
	}
	v, ok := m[name]
	if !ok || string(v) == "null" {
		return json.RawMessage(`{}`)
	}
	caps, err := digest.CanonicalClientCapabilities(v)
	if err != nil {
		return nil
	}
	return caps
}
