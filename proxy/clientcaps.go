package proxy

import (
	"encoding/json"
	"slices"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
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

// clientCaps are the client capabilities the client announced (its
// initialize, or the _meta of its server/discover or first 2026-07-28
// request), read once, strictly, when they arrive (readClientCaps): what
// the server's own requests are decided on (serverCallRefusal) and what
// the proxy's own listings record. nil: unknown (they could not be read),
// so nothing is announced.
type clientCaps struct {
	// raw is their RFC 8785 form (digest.CanonicalClientCapabilities).
	raw json.RawMessage
	// announced are the capabilities by exact name.
	announced map[string]bool
	// elicitForm and elicitURL are the modes the elicitation capability
	// announces: {} (form, from before modes existed) or a member per
	// mode; both false when it is not an object.
	elicitForm, elicitURL bool
}

// readClientCaps reads capabilities in RFC 8785 form (initializeCapabilities,
// metaCapabilities) with the strict reader; nil when raw is nil or not an
// object.
func readClientCaps(raw json.RawMessage) *clientCaps {
	if raw == nil {
		return nil
	}
	names, values, err := digest.Members(raw)
	if err != nil {
		return nil
	}
	c := &clientCaps{raw: raw, announced: make(map[string]bool, len(names))}
	for _, n := range names {
		c.announced[n] = true
	}
	if v, ok := values[capElicitation]; ok {
		if modes, _, err := digest.Members(v); err == nil {
			form, url := slices.Contains(modes, "form"), slices.Contains(modes, "url")
			c.elicitForm, c.elicitURL = form || !url, url
		}
	}
	return c
}

// rawCaps is what the proxy's own listings record of c (nil: unknown).
func (c *clientCaps) rawCaps() json.RawMessage {
	if c == nil {
		return nil
	}
	return c.raw
}
