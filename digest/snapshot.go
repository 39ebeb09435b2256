package digest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of an MCP definition.
type Kind string

// The three kinds of definition that mcpsign digests and signs. The string
// values are the ones used in snapshots, statements, locks and JSON output.
const (
	KindTool             Kind = "tool"
	KindPrompt           Kind = "prompt"
	KindResourceTemplate Kind = "resourceTemplate"
)

// KindResource is a static resource, an item of a resources/list result.
// It is digested as a definition is (docs/DIGEST.md), keyed by "uri", but it
// is no signed kind: it is not in Kinds, no statement has it, and Valid is
// false for it. A lock and a snapshot hold resources in a member of their
// own, only when they were listed (docs/LOCK.md, docs/SNAPSHOT.md).
const KindResource Kind = "resource"

// Kinds lists every signed Kind in the canonical order used for output and
// sorting. KindResource is not among them: it sorts after them.
var Kinds = [...]Kind{KindTool, KindPrompt, KindResourceTemplate}

// KeyMember is the member of a definition that identifies it within its kind:
// "name" for tools and prompts, "uriTemplate" for resource templates, "uri"
// for resources.
func (k Kind) KeyMember() string {
	switch k {
	case KindResourceTemplate:
		return "uriTemplate"
	case KindResource:
		return "uri"
	}
	return "name"
}

// ListMethod is the MCP method that lists definitions of this kind.
func (k Kind) ListMethod() string {
	switch k {
	case KindTool:
		return "tools/list"
	case KindPrompt:
		return "prompts/list"
	case KindResource:
		return "resources/list"
	default:
		return "resources/templates/list"
	}
}

// ListMember is the member of a list result that holds the definitions.
func (k Kind) ListMember() string {
	switch k {
	case KindTool:
		return "tools"
	case KindPrompt:
		return "prompts"
	case KindResource:
		return "resources"
	default:
		return "resourceTemplates"
	}
}

// Capability is the server capability that announces definitions of this
// kind: "tools", "prompts", or "resources" (resource templates and
// resources).
func (k Kind) Capability() string {
	switch k {
	case KindTool:
		return "tools"
	case KindPrompt:
		return "prompts"
	default:
		return "resources"
	}
}

// Count returns n definitions of kind k in words for people, singular or
// plural: "1 tool", "2 prompts", "0 resource templates".
func (k Kind) Count(n int) string {
	noun := "resource template"
	switch k {
	case KindTool:
		noun = "tool"
	case KindPrompt:
		noun = "prompt"
	case KindResource:
		noun = "resource"
	}
	if n != 1 {
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// CountText returns "N tools, N prompts, N resource templates" (singular
// where N is 1) for the number of definitions of each kind that n gives.
func CountText(n func(Kind) int) string {
	parts := make([]string, len(Kinds))
	for i, k := range Kinds {
		parts[i] = k.Count(n(k))
	}
	return strings.Join(parts, ", ")
}

// CountText is CountText of the definitions s holds of each kind.
func (s *Snapshot) CountText() string {
	return CountText(func(k Kind) int { return len(s.Definitions(k)) })
}

// Valid reports whether k is one of the three signed kinds (Kinds);
// KindResource is not.
func (k Kind) Valid() bool {
	return k == KindTool || k == KindPrompt || k == KindResourceTemplate
}

// ServerInfo names the server as it introduced itself (serverInfo).
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ParseServerInfo reads the serverInfo of an initialize or server/discover
// result strictly, since its strings go into snapshots and locks: an object
// without repeated members (Members), whose name and version, when present
// and not null, are strings decoded by DecodeString. Absent (empty raw) or
// null leaves both empty; other members are ignored.
func ParseServerInfo(raw []byte) (ServerInfo, error) {
	var si ServerInfo
	if len(raw) == 0 || string(raw) == "null" {
		return si, nil
	}
	m, err := ReadMembers(raw, "name", "version")
	if err != nil {
		return si, fmt.Errorf("serverInfo: %w", err)
	}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"name", &si.Name}, {"version", &si.Version}} {
		v, ok := m[f.name]
		if !ok || string(v) == "null" {
			continue
		}
		if *f.dst, err = DecodeString(v); err != nil {
			return si, fmt.Errorf("serverInfo.%s: %w", f.name, err)
		}
	}
	return si, nil
}

// SnapshotKind and SnapshotVersion identify a snapshot file.
const (
	SnapshotKind    = "mcpsign.snapshot"
	SnapshotVersion = 1
)

// Snapshot is what a source yielded: the server's identity, its protocol
// version and instructions, and every definition of every kind, each kept as
// the raw bytes received so that a digest computed later equals one computed
// live. Its JSON form is the normative snapshot file (docs/SNAPSHOT.md).
type Snapshot struct {
	Kind              string            `json:"kind"`
	SnapshotVersion   int               `json:"snapshotVersion"`
	Server            ServerInfo        `json:"server"`
	ProtocolVersion   string            `json:"protocolVersion"`
	Instructions      *string           `json:"instructions,omitempty"`
	Tools             []json.RawMessage `json:"tools"`
	Prompts           []json.RawMessage `json:"prompts"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	// Resources are the static resources (resources/list, all pages), as
	// received; nil when they were not listed (a policy that does not pin
	// them, a snapshot file without the member). They are part of no Set
	// Digest a statement signs (ComputeResources digests them).
	Resources  []json.RawMessage `json:"resources,omitempty"`
	CapturedAt time.Time         `json:"capturedAt"`
	// ClientCapabilities are the client capabilities announced to the
	// server when the definitions were read from it, in their RFC 8785
	// form (CanonicalClientCapabilities); nil when unknown: a snapshot file
	// without the member, or a bare list result. Servers may offer other
	// definitions to clients that announce other capabilities. They are
	// part of no Definition or Set Digest (docs/SNAPSHOT.md).
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	// Advertised is the capability object of a live server's hello that may
	// carry its own attestation (capabilities.extensions under the
	// 2026-07-28 generation, capabilities.experimental under the initialize
	// one), raw as received; nil when the server sent none or the snapshot
	// came from a file. It is not part of the snapshot file: it is a hint,
	// read with mcpwire.AdvertisedAttestation (docs/DISCOVERY.md).
	Advertised json.RawMessage `json:"-"`
}

// Definitions returns the raw definitions of one kind.
func (s *Snapshot) Definitions(k Kind) []json.RawMessage {
	switch k {
	case KindTool:
		return s.Tools
	case KindPrompt:
		return s.Prompts
	case KindResourceTemplate:
		return s.ResourceTemplates
	case KindResource:
		return s.Resources
	}
	return nil
}

// SetDefinitions replaces the raw definitions of one kind.
func (s *Snapshot) SetDefinitions(k Kind, defs []json.RawMessage) {
	switch k {
	case KindTool:
		s.Tools = defs
	case KindPrompt:
		s.Prompts = defs
	case KindResourceTemplate:
		s.ResourceTemplates = defs
	case KindResource:
		s.Resources = defs
	}
}

// ErrClientCapabilities is wrapped by every error of
// CanonicalClientCapabilities: the client capabilities are not a JSON
// object, or not strict JSON.
var ErrClientCapabilities = errors.New("invalid client capabilities")

// CanonicalClientCapabilities reads client capabilities strictly (the
// reader of Canonicalize: no repeated member name at any depth, valid
// UTF-8, RFC 8259 numbers) and returns their RFC 8785 form, the one form
// snapshots and locks record and compare. Anything but a JSON object
// (null, an array, a string) is refused. Every error wraps
// ErrClientCapabilities.
func CanonicalClientCapabilities(raw []byte) (json.RawMessage, error) {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		what := "nothing"
		if len(t) > 0 {
			what = shortValue(t)
		}
		return nil, fmt.Errorf("%w: want a JSON object, not %s", ErrClientCapabilities, what)
	}
	c, err := Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClientCapabilities, err)
	}
	return c, nil
}

// EqualClientCapabilities reports whether two client capability objects
// are the same JSON value (equal RFC 8785 forms). Either being nil (unknown)
// or unreadable is never equal to anything.
func EqualClientCapabilities(a, b []byte) bool {
	if a == nil || b == nil {
		return false
	}
	ca, err := CanonicalClientCapabilities(a)
	if err != nil {
		return false
	}
	cb, err := CanonicalClientCapabilities(b)
	return err == nil && bytes.Equal(ca, cb)
}
