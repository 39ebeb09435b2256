package mcpwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ProtocolLegacy is the newest version of the initialize handshake
// generation, the one asked for when falling back from server/discover.
const ProtocolLegacy = "2025-11-25"

// LegacyVersions are the initialize-handshake versions a server may answer
// with, newest first (the set go-sdk v1.8.0 accepts).
func LegacyVersions() []string {
	return []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
}

// IsLegacy reports whether v is a version of the initialize handshake.
func IsLegacy(v string) bool { return slices.Contains(LegacyVersions(), v) }

// Client is a Caller that can also send notifications.
type Client interface {
	Caller
	Notify(ctx context.Context, method string) error
}

// HandshakeOptions configure [Handshake].
type HandshakeOptions struct {
	// ProtocolVersion forces a version: ProtocolModern means server/discover
	// only; a legacy version means the initialize handshake only, asking
	// for it. Empty means as go-sdk's client: server/discover first, then
	// initialize with ProtocolLegacy.
	ProtocolVersion string
	// ClientInfo and ClientCapabilities are what the client announces (JSON
	// objects).
	ClientInfo, ClientCapabilities json.RawMessage
	// Rejected, when set, reports whether an error sending server/discover
	// is a rejection of that one request after which the initialize
	// handshake may be tried (a 4xx status over Streamable HTTP).
	Rejected func(error) bool
	// Negotiated, when set, is told the version the initialize handshake
	// chose (the Streamable HTTP transport sends it as a header).
	Negotiated func(version string)
}

// Handshake opens a session of either protocol generation as go-sdk's
// client does: server/discover (2026-07-28) first, then, when the server
// answers it with an error or offers no modern version, the initialize
// handshake followed by notifications/initialized. What the server said is
// read strictly (ParseDiscover, ParseInitialize); a server/discover answer
// that ParseDiscover refuses for its shape (IsShapeRefusal) is a fallback
// too, as for both official clients, while one refused by the strict reader
// alone is an error wrapping ErrProtocol.
func Handshake(ctx context.Context, c Client, o HandshakeOptions) (*Hello, error) {
	want := o.ProtocolVersion
	if want == "" || want == ProtocolModern {
		h, err := discover(ctx, c, &o)
		if err == nil {
			return h, nil
		}
		var fb *fallbackError
		if !errors.As(err, &fb) {
			return nil, err
		}
		if want == ProtocolModern {
			return nil, fmt.Errorf("server/discover (protocol %s forced): %w", ProtocolModern, fb.err)
		}
		want = ProtocolLegacy
	}
	return initialize(ctx, c, &o, want)
}

// fallbackError marks a server/discover failure after which the initialize
// handshake is tried.
type fallbackError struct{ err error }

func (e *fallbackError) Error() string { return e.err.Error() }
func (e *fallbackError) Unwrap() error { return e.err }

func discover(ctx context.Context, c Client, o *HandshakeOptions) (*Hello, error) {
	// The SEP-2575 per-request _meta that go-sdk v1.8.0 sends (client.go
	// injectRequestMeta): protocol version, client info and capabilities.
	clientMeta, _ := json.Marshal(map[string]json.RawMessage{
		MetaClientInfo:         o.ClientInfo,
		MetaClientCapabilities: o.ClientCapabilities,
	})
	meta, err := RequestMeta(clientMeta, ProtocolModern, nil)
	if err != nil {
		return nil, err
	}
	params, _ := json.Marshal(map[string]json.RawMessage{"_meta": meta})
	raw, err := c.Call(ctx, MethodDiscover, params)
	if err != nil {
		var rpc *RPCError
		if errors.As(err, &rpc) || (o.Rejected != nil && o.Rejected(err)) {
			// go-sdk falls back to initialize on any error answer; an
			// UnsupportedProtocolVersion error naming a newer modern
			// version would be retried there, but mcpsign speaks only one
			// modern version, so it falls back as well.
			return nil, &fallbackError{err}
		}
		return nil, err
	}
	h, ok, err := ParseDiscover(raw, meta, nil)
	if err != nil {
		if IsShapeRefusal(err) {
			// An answer the official clients' schemas refuse too (go-sdk's
			// and the TypeScript SDK v2's both fall back to initialize
			// then): no client holds what it says, so it is not read as
			// the server's hello either (docs/DISCOVERY.md, "How a hello
			// is read").
			return nil, &fallbackError{err}
		}
		// Refused by mcpsign's strict reader alone (a repeated member, a
		// case variant, invalid UTF-8): the official clients read it (the
		// last repeated member wins) and hold what it says, so falling
		// back would read a face no such client is shown. The server is
		// refused instead.
		return nil, fmt.Errorf("server/discover answer refused (the official clients would read it and not fall back to initialize): %w", err)
	}
	if !ok || h.ProtocolVersion != ProtocolModern {
		return nil, &fallbackError{fmt.Errorf("server/discover offers no protocol version %s", ProtocolModern)}
	}
	return h, nil
}

func initialize(ctx context.Context, c Client, o *HandshakeOptions, version string) (*Hello, error) {
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    o.ClientCapabilities,
		"clientInfo":      o.ClientInfo,
	})
	raw, err := c.Call(ctx, MethodInitialize, params)
	if err != nil {
		return nil, err
	}
	h, err := ParseInitialize(raw)
	if err != nil {
		return nil, err
	}
	if !IsLegacy(h.ProtocolVersion) {
		return nil, fmt.Errorf("%w: server chose protocol version %s, which the initialize handshake does not support", ErrProtocol, textsafe.RawQuote(textsafe.Cut(h.ProtocolVersion, 64)))
	}
	if o.Negotiated != nil {
		o.Negotiated(h.ProtocolVersion)
	}
	if err := c.Notify(ctx, MethodInitialized); err != nil {
		return nil, err
	}
	return h, nil
}
