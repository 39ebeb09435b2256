package digest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// newScanner returns a scanner of the envelope of a listing or snapshot
// (escapes false) or of any object read strictly (escapes true): nesting up
// to MaxDepth, and numbers read as the canonicalizer reads them (finite
// doubles). It does not apply the strict checks to string content: those
// apply to each definition on its own, so that one bad definition is named
// instead of failing the whole listing.
func newScanner(data []byte, escapes bool) *jsonscan.Scanner {
	return &jsonscan.Scanner{In: data, MaxDepth: MaxDepth, Escapes: escapes, Number: canonicalNumber}
}

// canonicalNumber reads a number as the canonicalizer does.
func canonicalNumber(s *jsonscan.Scanner) error {
	c := canonicalizer{in: s.In, pos: s.Pos}
	err := c.number()
	s.Pos = c.pos
	if err != nil {
		return s.Fail("%s", err.(*SyntaxError).Reason)
	}
	return nil
}

// Members returns the members of the JSON object that is the whole of
// data, in order, with their values as subslices of data (no copy). The
// object's structure is checked (RFC 8259) and its member names are decoded
// strictly (DecodeString), so a repeated name is refused however it is
// spelled ("id" and "\u0069d" are one name). Values are checked for
// structure and escape form only: decode a string value with DecodeString.
func Members(data []byte) (names []string, values map[string][]byte, err error) {
	return members(data, true)
}

// members is Members; escapes says whether escapes in values are checked
// (the envelope of a listing leaves them to each definition's own check,
// so that a bad definition is named).
func members(data []byte, escapes bool) (names []string, values map[string][]byte, err error) {
	s := newScanner(data, escapes)
	s.Space()
	if s.Pos >= len(data) || data[s.Pos] != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	values = map[string][]byte{}
	err = s.Object(0, func(name jsonscan.Span) error {
		n, err := DecodeString(data[name.Start-1 : name.End+1])
		if err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		if _, dup := values[n]; dup {
			return fmt.Errorf("repeated member %s", textsafe.RawQuote(n))
		}
		val, err := s.Value(1)
		if err != nil {
			return err
		}
		names = append(names, n)
		values[n] = data[val.Start:val.End:val.End]
		return nil
	})
	if err == nil {
		s.Space()
		if s.Pos != len(data) {
			err = s.Fail("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return names, values, nil
}

// Elements returns the elements of the JSON array that is the whole of
// data, in order, as subslices of data (no copy). The array's structure is
// checked as Members checks an object's, escapes included; the elements
// are not decoded.
func Elements(data []byte) ([][]byte, error) {
	s := newScanner(data, true)
	s.Space()
	if s.Pos >= len(data) || data[s.Pos] != '[' {
		return nil, errors.New("not a JSON array")
	}
	items := [][]byte{}
	err := s.Array(0, func(elem jsonscan.Span) { items = append(items, data[elem.Start:elem.End:elem.End]) })
	if err == nil {
		s.Space()
		if s.Pos != len(data) {
			err = s.Fail("unexpected data after the JSON array")
		}
	}
	if err != nil {
		return nil, err
	}
	return items, nil
}

// topMembers is Members for the envelope of a listing or snapshot, with
// errors that name what data is.
func topMembers(data []byte, what string) (names []string, values map[string][]byte, err error) {
	names, values, err = members(data, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return names, values, nil
}

// arrayElements returns the elements of the JSON array v as subslices.
func arrayElements(v []byte, what string) ([][]byte, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, errors.New(what + " is not a JSON array")
	}
	s := newScanner(v, false)
	items := [][]byte{}
	err := s.Array(0, func(elem jsonscan.Span) { items = append(items, v[elem.Start:elem.End:elem.End]) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return items, nil
}

// ReadMembers is Members for an object of which the reader reads the members
// named in known: besides repeated names, it refuses a name that is not one
// of them but equal to one under Unicode case folding ("Tools", "reſult" with
// U+017F). encoding/json, and so many Go peers, match member names that way
// and would read such a member as the known one, while a case-sensitive
// reader (the TypeScript SDK, go-sdk) would not: the two would see different
// values. Other members are returned as they are.
func ReadMembers(data []byte, known ...string) (map[string][]byte, error) {
	names, values, err := members(data, true)
	if err != nil {
		return nil, err
	}
	if err := CheckCaseVariants(names, known...); err != nil {
		return nil, err
	}
	return values, nil
}

// CheckCaseVariants reports an error for the first of names that is not
// one of known but equal to one of them under Unicode case folding (see
// ReadMembers).
func CheckCaseVariants(names []string, known ...string) error {
	for _, n := range names {
		for _, k := range known {
			if CaseVariant(n, k) {
				return fmt.Errorf("member %s would be read as %s by a case-insensitive reader", textsafe.RawQuote(n), textsafe.RawQuote(k))
			}
		}
	}
	return nil
}

// CaseVariant reports whether name differs from known but equals it under
// Unicode simple case folding, as encoding/json matches member names.
func CaseVariant(name, known string) bool {
	// A folded rune is at most three times as long in UTF-8 ("k" and the
	// Kelvin sign): the length test keeps the common case cheap.
	return name != known && len(name) >= len(known) && len(name) <= 3*len(known) && strings.EqualFold(name, known)
}
