package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// objectMembers reads a JSON object and returns its members by exact
// name. A member not in allowed, or a missing member of required, is an
// error naming it: encoding/json alone would match names case-insensitively
// and ignore unknown ones. The values are delimited, not validated: the
// caller has read the text strictly first.
func objectMembers(raw []byte, allowed, required []string) (map[string]json.RawMessage, error) {
	members, err := splitObject(raw)
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(members))
	for _, mb := range members {
		m[mb.name] = mb.value
	}
	if err := checkMembers(m, allowed, required); err != nil {
		return nil, err
	}
	return m, nil
}

// checkMembers refuses a member not in allowed and a missing member of
// required; a nil allowed allows any.
func checkMembers(m map[string]json.RawMessage, allowed, required []string) error {
	var unknown []string
	for name := range m {
		if allowed != nil && !slices.Contains(allowed, name) {
			unknown = append(unknown, textsafe.RawQuote(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(unknown) > 5 {
			unknown = append(unknown[:5], "…")
		}
		return fmt.Errorf("unknown member %s", strings.Join(unknown, ", "))
	}
	for _, name := range required {
		if _, ok := m[name]; !ok {
			return fmt.Errorf("member %s is missing", textsafe.RawQuote(name))
		}
	}
	return nil
}

// decodeString reads a JSON string member.
func decodeString(raw json.RawMessage) (string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", errors.New("not a string")
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// writeJSONString appends s as a JSON string, with <, > and & kept as they
// are.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// marshalJSON encodes v without HTML escaping and without the final
// newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// member is one member of a JSON object, its value's exact bytes.
type member struct {
	name  string
	value []byte
}

// splitObject splits a JSON object into its members without decoding the
// values: one pass over the bytes (internal/jsonscan), so that a large lock
// is not decoded member by member. Names are decoded (escapes and all);
// values are only delimited, and must be checked by a strict reader before
// they are trusted. A repeated name is an error.
func splitObject(raw []byte) ([]member, error) {
	s := &jsonscan.Scanner{In: raw, MaxDepth: maxScanDepth}
	s.Space()
	if s.Pos >= len(raw) || raw[s.Pos] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	err := s.Object(0, func(nameSpan jsonscan.Span) error {
		var name string
		if err := json.Unmarshal(raw[nameSpan.Start-1:nameSpan.End+1], &name); err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		if seen[name] {
			return fmt.Errorf("member %s is repeated", textsafe.RawQuote(name))
		}
		seen[name] = true
		val, err := s.Value(1)
		if err != nil {
			return err
		}
		out = append(out, member{name: name, value: raw[val.Start:val.End]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.Space(); s.Pos != len(raw) {
		return nil, s.Fail("unexpected data after the JSON object")
	}
	return out, nil
}

// splitArray splits a JSON array into its elements' exact bytes.
func splitArray(raw []byte) ([][]byte, error) {
	s := &jsonscan.Scanner{In: raw, MaxDepth: maxScanDepth}
	s.Space()
	if s.Pos >= len(raw) || raw[s.Pos] != '[' {
		return nil, errors.New("not an array")
	}
	var out [][]byte
	if err := s.Array(0, func(elem jsonscan.Span) { out = append(out, raw[elem.Start:elem.End]) }); err != nil {
		return nil, err
	}
	if s.Space(); s.Pos != len(raw) {
		return nil, s.Fail("unexpected data after the JSON array")
	}
	return out, nil
}

// maxScanDepth bounds the nesting splitObject and splitArray follow.
const maxScanDepth = 1000
