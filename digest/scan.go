package digest

import (
	"errors"
	"fmt"
	"strconv"
)

// span is a value's byte range in its input.
type span struct{ start, end int }

// structScanner checks the RFC 8259 structure of an envelope (a list result
// or a snapshot file) and finds the byte ranges of its values without
// copying them. It does not apply the strict checks to string content or
// number magnitude: those apply to each definition on its own, so that one
// bad definition is named instead of failing the whole listing.
type structScanner struct {
	in  []byte
	pos int
	// escapes, when set, checks the form of every escape in every string
	// (Members: the whole object must be RFC 8259 JSON).
	escapes bool
}

func (s *structScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *structScanner) space() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value skips one value and returns its span.
func (s *structScanner) value(depth int) (span, error) {
	if depth > MaxDepth {
		return span{}, s.errorf("nesting deeper than %d levels", MaxDepth)
	}
	if s.pos >= len(s.in) {
		return span{}, s.errorf("unexpected end of input")
	}
	start := s.pos
	var err error
	switch b := s.in[s.pos]; {
	case b == '{':
		err = s.object(depth+1, nil)
	case b == '[':
		err = s.array(depth+1, nil)
	case b == '"':
		_, err = s.str()
	case b == '-' || (b >= '0' && b <= '9'):
		c := canonicalizer{in: s.in, pos: s.pos}
		err = c.number()
		s.pos = c.pos
		if err != nil {
			err = s.errorf("%s", err.(*SyntaxError).Reason)
		}
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.in)-s.pos >= len(lit) && string(s.in[s.pos:s.pos+len(lit)]) == lit {
				s.pos += len(lit)
				return span{start, s.pos}, nil
			}
		}
		err = s.errorf("invalid character %s where a value was expected", quoteByte(b))
	}
	return span{start, s.pos}, err
}

// str skips a string and returns the span of its content (without quotes).
func (s *structScanner) str() (span, error) {
	s.pos++
	start := s.pos
	for s.pos < len(s.in) {
		switch b := s.in[s.pos]; {
		case b == '"':
			s.pos++
			return span{start, s.pos - 1}, nil
		case b == '\\' && s.escapes:
			if err := s.escape(); err != nil {
				return span{}, err
			}
		case b == '\\':
			s.pos += 2
		case b < 0x20:
			return span{}, s.errorf("unescaped control character in a string")
		default:
			s.pos++
		}
	}
	return span{}, s.errorf("unterminated string")
}

// escape checks the form of the escape at s.pos and skips it.
func (s *structScanner) escape() error {
	if s.pos+1 >= len(s.in) {
		return s.errorf("unterminated string")
	}
	switch s.in[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
	case 'u':
		if _, ok := hex4(s.in, s.pos+2); !ok {
			return s.errorf("invalid \\u escape")
		}
		s.pos += 6
	default:
		return s.errorf("invalid escape %s", quoteByte(s.in[s.pos+1]))
	}
	return nil
}

// object skips an object; for each member it calls each (when not nil)
// with the raw name span and the value span.
func (s *structScanner) object(depth int, each func(name, val span) error) error {
	s.pos++
	s.space()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.space()
		if s.pos >= len(s.in) || s.in[s.pos] != '"' {
			return s.errorf("expected a member name")
		}
		name, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return s.errorf("expected ':' after a member name")
		}
		s.pos++
		s.space()
		val, err := s.value(depth)
		if err != nil {
			return err
		}
		if each != nil {
			if err := each(name, val); err != nil {
				return err
			}
		}
		s.space()
		if s.pos < len(s.in) && s.in[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.in) && s.in[s.pos] == '}' {
			s.pos++
			return nil
		}
		return s.errorf("expected ',' or '}' in an object")
	}
}

// array skips an array; each (when not nil) is called with every element.
func (s *structScanner) array(depth int, each func(val span)) error {
	s.pos++
	s.space()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		s.space()
		val, err := s.value(depth)
		if err != nil {
			return err
		}
		if each != nil {
			each(val)
		}
		s.space()
		if s.pos < len(s.in) && s.in[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.in) && s.in[s.pos] == ']' {
			s.pos++
			return nil
		}
		return s.errorf("expected ',' or ']' in an array")
	}
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
	s := &structScanner{in: data, escapes: escapes}
	s.space()
	if s.pos >= len(data) || data[s.pos] != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	values = map[string][]byte{}
	err = s.object(1, func(name, val span) error {
		n, err := DecodeString(data[name.start-1 : name.end+1])
		if err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		if _, dup := values[n]; dup {
			return fmt.Errorf("repeated member %s", strconv.Quote(n))
		}
		names = append(names, n)
		values[n] = data[val.start:val.end:val.end]
		return nil
	})
	if err == nil {
		s.space()
		if s.pos != len(data) {
			err = s.errorf("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return names, values, nil
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
	s := &structScanner{in: v}
	items := [][]byte{}
	err := s.array(1, func(val span) { items = append(items, v[val.start:val.end:val.end]) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return items, nil
}
