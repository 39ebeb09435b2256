package mcpwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Protocol facts of both generations.
const (
	// ProtocolModern is the first version of the stateless generation
	// (SEP-2575): server/discover, and a _meta on every request. Later
	// versions compare greater as strings.
	ProtocolModern = "2026-07-28"

	MethodInitialize  = "initialize"
	MethodDiscover    = "server/discover"
	MethodPing        = "ping"
	MethodInitialized = "notifications/initialized"
	MethodCancelled   = "notifications/cancelled"

	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"

	CodeMethodNotFound = -32601
)

// Hello is what a handshake said: the protocol generation and version, the
// server, its instructions and its capabilities, and, under the modern
// generation, the _meta to send with every request.
type Hello struct {
	Modern          bool
	Meta            json.RawMessage // modern: the _meta sent with each request
	ProtocolVersion string
	Server          digest.ServerInfo
	Instructions    *string
	// Caps are the server's capabilities by name; nil when unknown (a modern
	// session without server/discover): every kind is then listed, and a
	// kind the server does not implement counts as empty.
	Caps map[string][]byte
}

// Announced reports whether the server announced the capability name (a
// member that is present and not null), or its capabilities are unknown.
func (h *Hello) Announced(name string) bool {
	if h.Caps == nil {
		return true
	}
	v, ok := h.Caps[name]
	return ok && string(v) != "null"
}

// The members of handshake results that mcpsign reads: each is read
// strictly, and a case variant of one is refused (digest.ReadMembers).
var (
	initializeMembers = []string{"protocolVersion", "capabilities", "serverInfo", "instructions", "_meta"}
	discoverMembers   = []string{"resultType", "supportedVersions", "capabilities", "serverInfo", "instructions", "_meta"}
	capabilityNames   = []string{"tools", "prompts", "resources", "logging", "completions", "experimental", "extensions"}
)

// capabilityFlags are the boolean members of the server capabilities that
// have them, as the official SDKs' schemas read them (docs/DISCOVERY.md,
// "How a hello is read").
// A function, not a map: nothing of mcpwire's is built at start
// (scripts/bench/inittrace).
func capabilityFlags(name string) []string {
	switch name {
	case "tools", "prompts":
		return []string{"listChanged"}
	case "resources":
		return []string{"subscribe", "listChanged"}
	}
	return nil
}

// ParseInitialize reads the result of initialize: protocol version,
// server, instructions and capabilities, strictly: the instructions are
// digested, and the result is what the client receives.
func ParseInitialize(result []byte) (*Hello, error) {
	const what = "initialize result"
	m, err := readMembers(result, what, initializeMembers)
	if err != nil {
		return nil, err
	}
	h := &Hello{}
	if v, ok := m["protocolVersion"]; ok {
		if h.ProtocolVersion, err = digest.DecodeString(v); err != nil {
			return nil, fmt.Errorf("%w: %s: protocolVersion: %w", ErrProtocol, what, err)
		}
	}
	if err := h.read(m, what, false); err != nil {
		return nil, err
	}
	return h, nil
}

// ParseDiscover reads the result of server/discover. meta is the _meta of
// the client's request, whose protocol version, client info and
// capabilities mcpsign's own requests repeat; nil means mcpsign's own
// (clientInfo, when not nil, names mcpsign). ok is false when the server
// offers no version of the modern generation (a client falls back to
// initialize then).
//
// The result is read at least as strictly as the strictest official client
// (the TypeScript SDK v2 client, whose 2026-07-28 codec refuses the answer
// and falls back to initialize): resultType is required and "complete";
// supportedVersions is required, an array of strings; capabilities is
// required, an object whose known members are objects (their flags
// booleans, the members of experimental and extensions objects);
// instructions, when present, a string (not null). Any of these refused is
// an error wrapping ErrProtocol that names the member by its JSON Pointer,
// and for which IsShapeRefusal is true. Any other refusal (a repeated
// member at any depth, a case variant of a member mcpsign reads, invalid
// UTF-8, a lone surrogate, a number outside the strict grammar, a server
// info that does not read) is mcpsign's strict reader's alone: the official
// clients read such an answer (the last repeated member wins), so it is
// not a reason to fall back (docs/DISCOVERY.md, "How a hello is read").
func ParseDiscover(result []byte, meta []byte, clientInfo json.RawMessage) (h *Hello, ok bool, err error) {
	const what = "server/discover result"
	m, err := readMembers(result, what, discoverMembers)
	if err != nil {
		return nil, false, err
	}
	rt, ok := m["resultType"]
	if !ok {
		// Not a shape refusal: the TypeScript SDK v2's probe reads
		// server/discover without resultType and takes the answer, so a
		// fallback to initialize would check another face than it holds.
		return nil, false, fmt.Errorf("%w: %s: /resultType is missing (protocol %s requires it, \"complete\")", ErrProtocol, what, ProtocolModern)
	}
	if s, err := digest.DecodeString(rt); err != nil || s != "complete" {
		// Not "complete" to any reader: a string that mcpsign cannot
		// decode strictly decodes to something else for a lax one too.
		return nil, false, fmt.Errorf("%w: %s: /resultType: want \"complete\", got %s", ErrProtocol, what, shownJSON(rt))
	}
	sv, ok := m["supportedVersions"]
	if !ok {
		return nil, false, shapeErrorf("%w: %s: /supportedVersions is missing", ErrProtocol, what)
	}
	if jsonKind(sv) != '[' {
		return nil, false, shapeErrorf("%w: %s: /supportedVersions: want an array of strings, got %s", ErrProtocol, what, shownJSON(sv))
	}
	elems, err := digest.Elements(sv)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: /supportedVersions: want an array of strings: %w", ErrProtocol, what, err)
	}
	versions := make([]string, 0, len(elems))
	for i, e := range elems {
		if jsonKind(e) != '"' {
			return nil, false, shapeErrorf("%w: %s: /supportedVersions/%d: want a string, got %s", ErrProtocol, what, i, shownJSON(e))
		}
		s, err := digest.DecodeString(e)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s: /supportedVersions/%d: %w", ErrProtocol, what, i, err)
		}
		versions = append(versions, s)
	}
	if c, ok := m["capabilities"]; !ok || jsonKind(c) != '{' {
		got := "nothing"
		if ok {
			got = shownJSON(c)
		}
		return nil, false, shapeErrorf("%w: %s: /capabilities: want an object, got %s", ErrProtocol, what, got)
	}
	if v, ok := m["instructions"]; ok && jsonKind(v) != '"' {
		return nil, false, shapeErrorf("%w: %s: /instructions: want a string, got %s", ErrProtocol, what, shownJSON(v))
	}
	want := ProtocolModern
	if v, ok := MetaVersion(meta); ok {
		want = v
	}
	version := ""
	if slices.Contains(versions, want) {
		version = want
	} else {
		for _, v := range versions {
			if v >= ProtocolModern && v > version {
				version = v
			}
		}
	}
	if version == "" || version < ProtocolModern {
		return nil, false, nil
	}
	h = &Hello{Modern: true, ProtocolVersion: version}
	if err := h.read(m, what, true); err != nil {
		return nil, false, err
	}
	if h.Server == (digest.ServerInfo{}) {
		// Where go-sdk v1.8.0 puts it.
		if mv, ok := m["_meta"]; ok && string(mv) != "null" {
			mm, err := readMembers(mv, what+" _meta", []string{MetaServerInfo})
			if err != nil {
				return nil, false, err
			}
			if h.Server, err = digest.ParseServerInfo(mm[MetaServerInfo]); err != nil {
				return nil, false, fmt.Errorf("%w: %w", ErrProtocol, err)
			}
		}
	}
	h.Meta, err = RequestMeta(meta, version, clientInfo)
	return h, true, err
}

// MetaVersion returns the protocol version a request _meta asks for
// (MetaProtocolVersion), read strictly; ok is false when meta is nil, has
// none, or it cannot be read.
func MetaVersion(meta []byte) (version string, ok bool) {
	if meta == nil {
		return "", false
	}
	m, err := digest.ReadMembers(meta, MetaProtocolVersion)
	if err != nil {
		return "", false
	}
	v, ok := m[MetaProtocolVersion]
	if !ok {
		return "", false
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", false
	}
	return s, true
}

// read takes server info, instructions and capabilities from a handshake
// result. modern says it is a server/discover result, whose capability
// members may not be null (checkCapabilities).
func (h *Hello) read(m map[string][]byte, what string, modern bool) error {
	var err error
	if h.Server, err = digest.ParseServerInfo(m["serverInfo"]); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrProtocol, what, err)
	}
	if v, ok := m["instructions"]; ok && string(v) != "null" {
		// The digest is over the exact text: invalid UTF-8 or a lone
		// surrogate is refused rather than replaced.
		s, err := digest.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%w: %s: instructions: %w", ErrProtocol, what, err)
		}
		h.Instructions = &s
	}
	h.Caps = map[string][]byte{}
	if v, ok := m["capabilities"]; ok && string(v) != "null" {
		if h.Caps, err = readMembers(v, what+" capabilities", capabilityNames); err != nil {
			return err
		}
		if err := checkCapabilities(h.Caps, !modern); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrProtocol, what, err)
		}
	}
	return nil
}

// checkCapabilities checks the types of the known server capabilities as
// the official SDKs' schemas do: each present is an object, its flags
// booleans, and each member of experimental and extensions an object. A
// capability a client would refuse is never taken for announced or absent.
// nulls says a null capability or flag counts as absent, as go-sdk reads an
// initialize result (Hello.Announced); server/discover's reader, the
// TypeScript SDK v2 client, refuses it.
func checkCapabilities(caps map[string][]byte, nulls bool) error {
	for _, name := range capabilityNames {
		v, ok := caps[name]
		if !ok || nulls && string(v) == "null" {
			continue
		}
		if jsonKind(v) != '{' {
			return shapeErrorf("/capabilities/%s: want an object, got %s", name, shownJSON(v))
		}
		switch name {
		case "experimental", "extensions":
			names, values, err := digest.Members(v)
			if err != nil {
				return fmt.Errorf("/capabilities/%s: %w", name, err)
			}
			for _, k := range names {
				if jsonKind(values[k]) != '{' {
					return shapeErrorf("/capabilities/%s/%s: want an object, got %s", name, digest.PointerToken(k), shownJSON(values[k]))
				}
			}
		default:
			flags := capabilityFlags(name)
			if len(flags) == 0 {
				continue
			}
			fm, err := digest.ReadMembers(v, flags...)
			if err != nil {
				return fmt.Errorf("/capabilities/%s: %w", name, err)
			}
			for _, f := range flags {
				if fv, ok := fm[f]; ok && string(fv) != "true" && string(fv) != "false" && !(nulls && string(fv) == "null") {
					return shapeErrorf("/capabilities/%s/%s: want a boolean, got %s", name, f, shownJSON(fv))
				}
			}
		}
	}
	return nil
}

// shapeError is a refusal of a handshake result's member types or shape,
// one the official clients' schemas make too (IsShapeRefusal).
type shapeError struct{ err error }

func (e *shapeError) Error() string { return e.err.Error() }
func (e *shapeError) Unwrap() error { return e.err }

func shapeErrorf(format string, a ...any) error {
	return &shapeError{fmt.Errorf(format, a...)}
}

// IsShapeRefusal reports whether err, from ParseDiscover, refuses the
// answer for a rule the official clients' schemas check too (a member's
// type, a required member missing), after which they fall back to
// initialize; false for a refusal only mcpsign's strict reader makes.
func IsShapeRefusal(err error) bool {
	var se *shapeError
	return errors.As(err, &se)
}

// jsonKind returns the first byte of a JSON value ('{', '[', '"', 't',
// 'f', 'n', or a number's first character), 0 for none.
func jsonKind(v []byte) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// shownJSON is a server's JSON value for an error message, cut short (the
// message is escaped where it is printed).
func shownJSON(v []byte) string {
	return textsafe.Cut(string(v), 64)
}

// RequestMeta builds the _meta of mcpsign's own modern requests: the
// client's protocol version, client info and capabilities when it sent them
// (so that the server answers mcpsign as it answers the client), with the
// version the server offers. clientInfo stands in for a client that sent
// none (nil: "mcpsign").
func RequestMeta(clientMeta []byte, version string, clientInfo json.RawMessage) (json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if clientMeta != nil {
		m, err := digest.ReadMembers(clientMeta, MetaClientInfo, MetaClientCapabilities)
		if err == nil {
			for _, k := range []string{MetaClientInfo, MetaClientCapabilities} {
				if v, ok := m[k]; ok {
					out[k] = v
				}
			}
		}
	}
	v, _ := json.Marshal(version)
	out[MetaProtocolVersion] = v
	if _, ok := out[MetaClientInfo]; !ok {
		if clientInfo == nil {
			clientInfo = json.RawMessage(`{"name":"mcpsign","version":"devel"}`)
		}
		out[MetaClientInfo] = clientInfo
	}
	if _, ok := out[MetaClientCapabilities]; !ok {
		out[MetaClientCapabilities] = json.RawMessage(`{}`)
	}
	return json.Marshal(out)
}

// MetaOf returns the _meta of request params, or nil.
func MetaOf(params []byte) []byte {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	m, err := digest.ReadMembers(params, "_meta")
	if err != nil {
		return nil
	}
	if v, ok := m["_meta"]; ok && len(v) > 0 && v[0] == '{' {
		return v
	}
	return nil
}

// readMembers is digest.ReadMembers with errors that say what data is.
func readMembers(data []byte, what string, known []string) (map[string][]byte, error) {
	m, err := digest.ReadMembers(data, known...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProtocol, what, err)
	}
	return m, nil
}

// IsListChanged reports whether method is a notification by which a server
// says that a list a client holds changed (tools, prompts, resources):
// clients list that kind again on it.
func IsListChanged(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}
