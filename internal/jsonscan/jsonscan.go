// Package jsonscan checks the RFC 8259 structure of JSON text and finds the
// byte ranges of its values without decoding or copying them. The strict
// readers of package digest (listings, snapshots) and package proxy
// (JSON-RPC envelopes) are built on this one scanner, so that they agree on
// where a value begins and ends.
package jsonscan

import (
	"fmt"
	"strconv"
)

// Span is a value's byte range in the input: In[Start:End].
type Span struct{ Start, End int }

// Error is a syntax error at a byte offset of the input.
type Error struct {
	Offset int
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Reason)
}

// Scanner reads the JSON text In from Pos.
type Scanner struct {
	In  []byte
	Pos int
	// MaxDepth bounds nesting: a value inside more than MaxDepth arrays and
	// objects is refused.
	MaxDepth int
	// Escapes checks the form of every escape in every string ("\x" and
	// "\u12" are refused); without it a string ends at the first unescaped
	// quote and its escapes are left to whoever decodes it.
	Escapes bool
	// SkipDeep makes a value nested deeper than MaxDepth skipped instead
	// of refused: its structure is still checked (RFC 8259, escapes as
	// Escapes says), without recursion, so that a list whose elements are
	// each read again under their own bound (the entries of a registry
	// page) is not refused whole for one deep element.
	SkipDeep bool
	// Number, when set, reads the number at Pos and moves Pos past it (a
	// caller's stricter reading, such as a range check); by default the
	// RFC 8259 grammar is checked (NumberEnd).
	Number func(s *Scanner) error
}

// Fail returns an *Error at Pos.
func (s *Scanner) Fail(format string, args ...any) error {
	return &Error{Offset: s.Pos, Reason: fmt.Sprintf(format, args...)}
}

// Space skips white space.
func (s *Scanner) Space() {
	for s.Pos < len(s.In) {
		switch s.In[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// Value reads one value at Pos (no leading space), inside depth arrays and
// objects, and returns its span.
func (s *Scanner) Value(depth int) (Span, error) {
	if depth > s.MaxDepth {
		if s.SkipDeep {
			start := s.Pos
			err := s.skipDeep()
			return Span{start, s.Pos}, err
		}
		return Span{}, s.Fail("nesting deeper than %d levels", s.MaxDepth)
	}
	if s.Pos >= len(s.In) {
		return Span{}, s.Fail("unexpected end of input")
	}
	start := s.Pos
	var err error
	switch b := s.In[s.Pos]; {
	case b == '{':
		err = s.Object(depth, nil)
	case b == '[':
		err = s.Array(depth, nil)
	case b == '"':
		_, err = s.Str()
	case b == '-' || (b >= '0' && b <= '9'):
		if s.Number != nil {
			err = s.Number(s)
		} else {
			end, reason := NumberEnd(s.In, s.Pos)
			if reason != "" {
				err = s.Fail("%s", reason)
			} else {
				s.Pos = end
			}
		}
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.In)-s.Pos >= len(lit) && string(s.In[s.Pos:s.Pos+len(lit)]) == lit {
				s.Pos += len(lit)
				return Span{start, s.Pos}, nil
			}
		}
		err = s.Fail("invalid character %s where a value was expected", QuoteByte(b))
	}
	return Span{start, s.Pos}, err
}

// skipDeep reads the value at Pos with an explicit stack of the open
// arrays and objects instead of recursion (SkipDeep).
func (s *Scanner) skipDeep() error {
	var stack []byte // '[' or '{' of each open container
	// want: 'v' a value, 'k' a member name or '}', 'K' a member name,
	// 'V' a value or ']', 'e' after a value: ',' or the close.
	want := byte('v')
	for {
		s.Space()
		if s.Pos >= len(s.In) {
			return s.Fail("unexpected end of input")
		}
		b := s.In[s.Pos]
		switch want {
		case 'k', 'K':
			if b == '}' && want == 'k' {
				s.Pos++
				stack = stack[:len(stack)-1]
				want = 'e'
				break
			}
			if b != '"' {
				return s.Fail("expected a member name")
			}
			if _, err := s.Str(); err != nil {
				return err
			}
			s.Space()
			if s.Pos >= len(s.In) || s.In[s.Pos] != ':' {
				return s.Fail("expected ':' after a member name")
			}
			s.Pos++
			want = 'v'
		case 'v', 'V':
			switch {
			case b == ']' && want == 'V':
				s.Pos++
				stack = stack[:len(stack)-1]
				want = 'e'
			case b == '{':
				s.Pos++
				stack = append(stack, '{')
				want = 'k'
			case b == '[':
				s.Pos++
				stack = append(stack, '[')
				want = 'V'
			default:
				// A scalar: Value at depth 0 reads it without nesting.
				if _, err := s.Value(0); err != nil {
					return err
				}
				want = 'e'
			}
		case 'e':
			if len(stack) == 0 {
				return nil
			}
			top := stack[len(stack)-1]
			switch {
			case b == ',' && top == '{':
				s.Pos++
				want = 'K'
			case b == ',':
				s.Pos++
				want = 'v'
			case b == '}' && top == '{', b == ']' && top == '[':
				s.Pos++
				stack = stack[:len(stack)-1]
			default:
				return s.Fail("expected ',' or a close in a nested value")
			}
		}
		if want == 'e' && len(stack) == 0 {
			return nil
		}
	}
}

// Str reads the string at Pos (its opening quote) and returns the span of
// its content, without the quotes.
func (s *Scanner) Str() (Span, error) {
	// The loop works on locals, not on s.In and s.Pos: a string is read a
	// byte at a time, and every access through s is a load or a store of
	// its own (under the race detector, an instrumented call each; a
	// 16 MiB string the limits let through took seconds).
	in, i := s.In, s.Pos+1
	start := i
	for i < len(in) {
		switch b := in[i]; {
		case b == '"':
			s.Pos = i + 1
			return Span{start, i}, nil
		case b == '\\' && s.Escapes:
			s.Pos = i
			if err := s.escape(); err != nil {
				return Span{}, err
			}
			i = s.Pos
		case b == '\\':
			i += 2
		case b < 0x20:
			s.Pos = i
			return Span{}, s.Fail("unescaped control character in a string")
		default:
			i++
		}
	}
	s.Pos = i
	return Span{}, s.Fail("unterminated string")
}

// escape checks the form of the escape at Pos and skips it.
func (s *Scanner) escape() error {
	if s.Pos+1 >= len(s.In) {
		return s.Fail("unterminated string")
	}
	switch s.In[s.Pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.Pos += 2
	case 'u':
		if s.Pos+6 > len(s.In) || !isHex4(s.In[s.Pos+2:s.Pos+6]) {
			return s.Fail(`invalid \u escape`)
		}
		s.Pos += 6
	default:
		return s.Fail("invalid escape %s", QuoteByte(s.In[s.Pos+1]))
	}
	return nil
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
			return false
		}
	}
	return true
}

// Object reads the object at Pos (its '{') inside depth arrays and
// objects. For each member it reads the name and the ':', then calls each
// with the span of the name's content (without the quotes), with Pos at the
// value; each must read the value (Value(depth+1), or a reading of its
// own). A nil each skips every value.
func (s *Scanner) Object(depth int, each func(name Span) error) error {
	s.Pos++
	s.Space()
	if s.Pos < len(s.In) && s.In[s.Pos] == '}' {
		s.Pos++
		return nil
	}
	for {
		s.Space()
		if s.Pos >= len(s.In) || s.In[s.Pos] != '"' {
			return s.Fail("expected a member name")
		}
		name, err := s.Str()
		if err != nil {
			return err
		}
		s.Space()
		if s.Pos >= len(s.In) || s.In[s.Pos] != ':' {
			return s.Fail("expected ':' after a member name")
		}
		s.Pos++
		s.Space()
		if each == nil {
			_, err = s.Value(depth + 1)
		} else {
			err = each(name)
		}
		if err != nil {
			return err
		}
		s.Space()
		if s.Pos < len(s.In) {
			switch s.In[s.Pos] {
			case ',':
				s.Pos++
				continue
			case '}':
				s.Pos++
				return nil
			}
		}
		return s.Fail("expected ',' or '}' in an object")
	}
}

// Array reads the array at Pos (its '[') inside depth arrays and objects,
// calling each (when not nil) with the span of every element.
func (s *Scanner) Array(depth int, each func(elem Span)) error {
	s.Pos++
	s.Space()
	if s.Pos < len(s.In) && s.In[s.Pos] == ']' {
		s.Pos++
		return nil
	}
	for {
		s.Space()
		elem, err := s.Value(depth + 1)
		if err != nil {
			return err
		}
		if each != nil {
			each(elem)
		}
		s.Space()
		if s.Pos < len(s.In) {
			switch s.In[s.Pos] {
			case ',':
				s.Pos++
				continue
			case ']':
				s.Pos++
				return nil
			}
		}
		return s.Fail("expected ',' or ']' in an array")
	}
}

// NumberEnd checks the RFC 8259 number at in[p:] and returns where it ends,
// or why it is not one (reason != ""). A number must end at a delimiter:
// "1x", "0x10" and "1_0" are not numbers.
func NumberEnd(in []byte, p int) (end int, reason string) {
	neg := p < len(in) && in[p] == '-'
	if neg {
		p++
	}
	switch {
	case p >= len(in) && neg:
		return p, "invalid number: digits expected after '-'"
	case p >= len(in):
		return p, "invalid number: digits expected"
	case in[p] == '0':
		p++
		if p < len(in) && in[p] >= '0' && in[p] <= '9' {
			return p, "invalid number: leading zero"
		}
	case in[p] >= '1' && in[p] <= '9':
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
	default:
		return p, "invalid number: digits expected"
	}
	if p < len(in) && in[p] == '.' {
		p++
		d := p
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
		if p == d {
			return p, "invalid number: digits expected after '.'"
		}
	}
	if p < len(in) && (in[p] == 'e' || in[p] == 'E') {
		p++
		if p < len(in) && (in[p] == '+' || in[p] == '-') {
			p++
		}
		d := p
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
		if p == d {
			return p, "invalid number: digits expected in the exponent"
		}
	}
	if p < len(in) {
		switch in[p] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
		default:
			return p, "invalid number: unexpected " + QuoteByte(in[p]) + " in a number"
		}
	}
	return p, ""
}

// QuoteByte shows one byte of input in a message: 'x' (raw: the edge
// printing the message escapes a backslash once), or byte 0x1f.
func QuoteByte(b byte) string {
	if b >= 0x20 && b < 0x7f {
		return "'" + string(rune(b)) + "'"
	}
	return "byte 0x" + strconv.FormatUint(uint64(b), 16)
}
