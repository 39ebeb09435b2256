package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
			unknown = append(unknown, strconv.Quote(name))
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
			return fmt.Errorf("member %s is missing", strconv.Quote(name))
		}
	}
	return nil
}

// strictObject is objectMembers after a strict read of the whole text
// (valid UTF-8, no repeated member names, RFC 8259 numbers).
func strictObject(raw []byte, allowed, required []string) (map[string]json.RawMessage, error) {
	if err := checkStrict(raw); err != nil {
		return nil, err
	}
	return objectMembers(raw, allowed, required)
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

// errSyntax is the error of the splitters on text that is not JSON.
var errSyntax = errors.New("not well-formed JSON")

// splitObject splits a JSON object into its members without decoding the
// values: one pass over the bytes, so that a large lock is not decoded
// member by member. Names are decoded (escapes and all); values are only
// delimited, and must be checked by a strict reader before they are
// trusted. A repeated name is an error.
func splitObject(raw []byte) ([]member, error) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		if skipWS(raw, i+1) != len(raw) {
			return nil, errSyntax
		}
		return out, nil
	}
	for {
		end, err := scanString(raw, i)
		if err != nil {
			return nil, err
		}
		var name string
		if err := json.Unmarshal(raw[i:end], &name); err != nil {
			return nil, errSyntax
		}
		if seen[name] {
			return nil, fmt.Errorf("member %s is repeated", strconv.Quote(name))
		}
		seen[name] = true
		i = skipWS(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, errSyntax
		}
		start := skipWS(raw, i+1)
		if end, err = scanValue(raw, start, 0); err != nil {
			return nil, err
		}
		out = append(out, member{name: name, value: raw[start:end]})
		i = skipWS(raw, end)
		if i >= len(raw) {
			return nil, errSyntax
		}
		if raw[i] == '}' {
			if skipWS(raw, i+1) != len(raw) {
				return nil, errSyntax
			}
			return out, nil
		}
		if raw[i] != ',' {
			return nil, errSyntax
		}
		i = skipWS(raw, i+1)
	}
}

// splitArray splits a JSON array into its elements' exact bytes.
func splitArray(raw []byte) ([][]byte, error) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, errors.New("not an array")
	}
	var out [][]byte
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		if skipWS(raw, i+1) != len(raw) {
			return nil, errSyntax
		}
		return out, nil
	}
	for {
		end, err := scanValue(raw, i, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, raw[i:end])
		i = skipWS(raw, end)
		if i >= len(raw) {
			return nil, errSyntax
		}
		if raw[i] == ']' {
			if skipWS(raw, i+1) != len(raw) {
				return nil, errSyntax
			}
			return out, nil
		}
		if raw[i] != ',' {
			return nil, errSyntax
		}
		i = skipWS(raw, i+1)
	}
}

// maxScanDepth bounds the nesting splitObject and splitArray follow.
const maxScanDepth = 1000

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the end of the string starting at b[i].
func scanString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errSyntax
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errSyntax
}

// scanValue returns the end of the JSON value starting at b[i]. It
// delimits; it does not validate numbers or literals.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	if depth > maxScanDepth {
		return 0, errors.New("nested too deeply")
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if closer == '}' {
				if i, err = scanString(b, i); err != nil {
					return 0, err
				}
				i = skipWS(b, i)
				if i >= len(b) || b[i] != ':' {
					return 0, errSyntax
				}
				i = skipWS(b, i+1)
			}
			if i, err = scanValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, errSyntax
			}
			if b[i] == closer {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errSyntax
			}
			i = skipWS(b, i+1)
		}
	default:
		start := i
		for i < len(b) && strings.IndexByte(" \t\r\n,]}:", b[i]) < 0 {
			i++
		}
		if i == start {
			return 0, errSyntax
		}
		return i, nil
	}
}
