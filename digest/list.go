package digest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// rawArray splits a JSON array into its elements' exact bytes, without
// copying them.
func rawArray(v []byte, what string) ([]json.RawMessage, error) {
	elems, err := arrayElements(v, what)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(elems))
	for i, e := range elems {
		items[i] = e
	}
	return items, nil
}

// SplitList reads one page of a list result (the "result" of tools/list,
// prompts/list, resources/templates/list or resources/list) and returns its definitions as
// the exact bytes received, and the cursor of the next page when there is
// one. A repeated member name in the result, a case variant of a list
// member or of nextCursor, a missing definitions array or a nextCursor that
// is not a string is an error.
func SplitList(k Kind, result []byte) (items []json.RawMessage, nextCursor string, hasNext bool, err error) {
	what := k.ListMethod() + " result"
	names, values, err := topMembers(result, what)
	if err != nil {
		return nil, "", false, err
	}
	// A case variant of a list member ("Tools") is what a case-insensitive
	// reader would take for the list.
	if err := CheckCaseVariants(names, "tools", "prompts", "resourceTemplates", "resources", "nextCursor"); err != nil {
		return nil, "", false, fmt.Errorf("%s: %w", what, err)
	}
	list, ok := values[k.ListMember()]
	if !ok {
		return nil, "", false, fmt.Errorf("%s has no %s member", what, textsafe.RawQuote(k.ListMember()))
	}
	items, err = rawArray(list, what+" member "+textsafe.RawQuote(k.ListMember()))
	if err != nil {
		return nil, "", false, err
	}
	if c, ok := values["nextCursor"]; ok {
		if len(c) == 0 || c[0] != '"' {
			return nil, "", false, fmt.Errorf("%s: nextCursor is not a string", what)
		}
		s, err := DecodeString(c)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: nextCursor: %w", what, err)
		}
		return items, s, true, nil
	}
	return items, "", false, nil
}

// QuoteName quotes a member name for an error message raw
// (textsafe.RawQuote: the edge printing it escapes it once), followed by the
// code points of its characters outside ASCII, so that a name that only
// looks like another ("Kind" with U+212A KELVIN SIGN, for "kind") is shown
// as it is spelled.
func QuoteName(name string) string {
	q := textsafe.RawQuote(name)
	var cps []string
	for _, r := range name {
		if r >= utf8.RuneSelf {
			if len(cps) == 8 {
				cps = append(cps, "…")
				break
			}
			cps = append(cps, fmt.Sprintf("U+%04X", r))
		}
	}
	if len(cps) > 0 {
		q += " (spelled with " + strings.Join(cps, ", ") + ")"
	}
	return q
}

// DecodeString decodes one JSON string strictly: invalid UTF-8 and lone or
// reversed surrogates are refused instead of being replaced by U+FFFD, so
// that a digest over the decoded text is a digest over what was sent.
func DecodeString(raw []byte) (string, error) {
	c := canonPool.Get().(*canonicalizer)
	defer canonPool.Put(c)
	c.in, c.pos, c.path, c.keys = raw, 0, c.path[:0], c.keys[:0]
	c.skipSpace()
	if c.pos >= len(raw) || raw[c.pos] != '"' {
		return "", errors.New("not a JSON string")
	}
	s, err := c.str(nil, false)
	if err != nil {
		return "", err
	}
	c.skipSpace()
	if c.pos != len(raw) {
		return "", errors.New("unexpected data after the JSON string")
	}
	return string(s), nil
}

// ErrSnapshot is wrapped by every error of ParseSnapshot: the file is
// neither a snapshot file nor a bare list result, as docs/SNAPSHOT.md
// defines them.
var ErrSnapshot = errors.New("invalid snapshot file")

// ParseSnapshot reads a SOURCE file strictly, one way (docs/SNAPSHOT.md):
//
//   - an object with a member "kind" is a snapshot file: kind exactly
//     "mcpsign.snapshot", snapshotVersion 1, every required member present
//     and no other member, at the top level or in server;
//   - an object without "kind" is a bare list result: exactly one member,
//     "tools", "prompts" or "resourceTemplates", read by SplitList. Any
//     other member ("Kind", "Tools", "result", "instructions", "_meta",
//     "nextCursor"…) is refused, naming it: a file that looks like a snapshot
//     to a lenient reader is never read as a list that drops its
//     instructions and server.
//
// Definitions are kept as the exact bytes in the file. Every error wraps
// ErrSnapshot and names the member at fault.
func ParseSnapshot(data []byte) (*Snapshot, error) {
	names, values, err := topMembers(data, "snapshot")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if _, ok := values["kind"]; !ok {
		return parseBareList(data, names)
	}
	s := &Snapshot{Kind: SnapshotKind, SnapshotVersion: SnapshotVersion}
	for _, name := range names {
		v := values[name]
		var err error
		switch name {
		case "kind":
			var kind string
			if kind, err = DecodeString(v); err == nil && kind != SnapshotKind {
				err = fmt.Errorf("is %s, not %s", QuoteName(kind), textsafe.RawQuote(SnapshotKind))
			}
		case "snapshotVersion":
			if string(v) != "1" {
				err = fmt.Errorf("%s is not supported (this mcpsign reads version %d, written 1)", shortValue(v), SnapshotVersion)
			}
		case "server":
			err = parseServerInfo(v, &s.Server)
		case "protocolVersion":
			s.ProtocolVersion, err = DecodeString(v)
		case "instructions":
			var ins string
			ins, err = DecodeString(v)
			s.Instructions = &ins
		case "clientCapabilities":
			s.ClientCapabilities, err = CanonicalClientCapabilities(v)
		case "tools", "prompts", "resourceTemplates":
			var items []json.RawMessage
			items, err = rawArray(v, "the member")
			s.SetDefinitions(kindOfListMember(name), items)
		case "resources":
			// Optional: present when the resources were listed.
			s.Resources, err = rawArray(v, "the member")
		case "capturedAt":
			var at string
			if at, err = DecodeString(v); err == nil {
				s.CapturedAt, err = time.Parse(time.RFC3339Nano, at)
			}
		default:
			err = errors.New("is not a member of a snapshot file")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: member %s: %w", ErrSnapshot, QuoteName(name), err)
		}
	}
	for _, need := range [...]string{"snapshotVersion", "server", "protocolVersion", "tools", "prompts", "resourceTemplates", "capturedAt"} {
		if _, ok := values[need]; !ok {
			return nil, fmt.Errorf("%w: member %s is missing", ErrSnapshot, textsafe.RawQuote(need))
		}
	}
	return s, nil
}

// shortValue quotes the start of a raw JSON value for an error message.
func shortValue(v []byte) string {
	if len(v) > 40 {
		return textsafe.RawQuote(string(v[:40])) + "…"
	}
	return textsafe.RawQuote(string(v))
}

func parseServerInfo(v []byte, si *ServerInfo) error {
	names, m, err := topMembers(v, "server")
	if err != nil {
		return err
	}
	for _, name := range names {
		val := m[name]
		switch name {
		case "name":
			si.Name, err = DecodeString(val)
		case "version":
			si.Version, err = DecodeString(val)
		default:
			err = errors.New("is not a member of server")
		}
		if err != nil {
			return fmt.Errorf("server member %s: %w", QuoteName(name), err)
		}
	}
	for _, need := range [...]string{"name", "version"} {
		if _, ok := m[need]; !ok {
			return fmt.Errorf("server member %s is missing", textsafe.RawQuote(need))
		}
	}
	return nil
}

func kindOfListMember(name string) Kind {
	for _, k := range Kinds {
		if k.ListMember() == name {
			return k
		}
	}
	return ""
}

// parseBareList reads a SOURCE file without "kind": exactly one member, the
// definitions array of one kind, as SplitList reads a list result.
func parseBareList(data []byte, names []string) (*Snapshot, error) {
	var kind Kind
	for _, name := range names {
		switch k := kindOfListMember(name); {
		case name == "nextCursor":
			return nil, fmt.Errorf("%w: member \"nextCursor\": a list result with a next page is one page of a longer listing; take a whole snapshot with `mcpsign snapshot`", ErrSnapshot)
		case k == "" || kind != "":
			return nil, fmt.Errorf("%w: member %s: a file without \"kind\" must be a bare list result, with exactly one member, \"tools\", \"prompts\" or \"resourceTemplates\" (a snapshot file has \"kind\": %s)", ErrSnapshot, QuoteName(name), textsafe.RawQuote(SnapshotKind))
		default:
			kind = k
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("%w: no \"kind\" member, and not a list result (no \"tools\", \"prompts\" or \"resourceTemplates\" array)", ErrSnapshot)
	}
	items, _, _, err := SplitList(kind, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	s := &Snapshot{Kind: SnapshotKind, SnapshotVersion: SnapshotVersion}
	for _, k := range Kinds {
		s.SetDefinitions(k, []json.RawMessage{})
	}
	s.SetDefinitions(kind, items)
	return s, nil
}

// MarshalFile returns the snapshot file: the envelope of the normative
// format with every definition written out as the exact bytes received, so
// that the digest of the file equals the digest of the live server.
func (s *Snapshot) MarshalFile() ([]byte, error) {
	var b bytes.Buffer
	str := func(v string) { b.Write(appendCanonicalString(nil, []byte(v))) }
	b.WriteString("{\n  \"kind\": \"" + SnapshotKind + "\",\n  \"snapshotVersion\": 1,\n  \"server\": {\"name\": ")
	str(s.Server.Name)
	b.WriteString(", \"version\": ")
	str(s.Server.Version)
	b.WriteString("},\n  \"protocolVersion\": ")
	str(s.ProtocolVersion)
	if s.Instructions != nil {
		b.WriteString(",\n  \"instructions\": ")
		str(*s.Instructions)
	}
	if s.ClientCapabilities != nil {
		caps, err := CanonicalClientCapabilities(s.ClientCapabilities)
		if err != nil {
			return nil, err
		}
		b.WriteString(",\n  \"clientCapabilities\": ")
		b.Write(caps)
	}
	// The resources, when listed, after the definitions.
	kinds := Kinds[:]
	if s.Resources != nil {
		kinds = append(kinds[:len(kinds):len(kinds)], KindResource)
	}
	for _, k := range kinds {
		b.WriteString(",\n  \"" + k.ListMember() + "\": [")
		for i, raw := range s.Definitions(k) {
			if !json.Valid(raw) {
				return nil, fmt.Errorf("%s #%d is not valid JSON", k, i)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    ")
			b.Write(raw)
		}
		if len(s.Definitions(k)) > 0 {
			b.WriteString("\n  ")
		}
		b.WriteByte(']')
	}
	b.WriteString(",\n  \"capturedAt\": ")
	str(s.CapturedAt.UTC().Format(time.RFC3339Nano))
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}
