package digest

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// MaxDepth bounds the nesting of arrays and objects in any JSON text that
// mcpsign reads strictly. Real definitions nest a few levels; the bound keeps
// hostile input from exhausting the stack.
const MaxDepth = 512

// maxSafeInteger is 2^53: a number whose magnitude reaches it cannot be
// represented exactly by every JSON implementation (RFC 7493 section 2.2), so
// a definition holding one has no digest.
const maxSafeInteger = 1 << 53

// canonOptions selects what the strict reader refuses and removes.
type canonOptions struct {
	// safeNumbers refuses any number of magnitude >= 2^53.
	safeNumbers bool
	// definition requires a top-level object, drops its top-level "_meta"
	// member and captures the string value of keyMember.
	definition bool
	keyMember  string
}

// member is one member of an object being canonicalized: its decoded name in
// the key arena and its canonical "name":value bytes in the output.
type member struct {
	keyStart, keyEnd int
	outStart, outEnd int
}

// frame is one step of the path from the root to the value being read, kept
// so that an error can name the JSON pointer of the offending value.
type frame struct {
	array            bool
	index            int
	keyStart, keyEnd int
}

// canonicalizer is a strict, single-pass JSON reader that writes the RFC 8785
// form of what it reads. It refuses everything RFC 8259 and RFC 8785 refuse
// (and what gowebpki/jcs lets through: invalid UTF-8, reversed surrogate
// pairs, non-RFC 8259 number spellings), and repeated member names at any
// depth. Its output is byte-identical to jcs.Transform for every input it
// accepts; the tests and the fuzz targets check that against the library.
type canonicalizer struct {
	in      []byte
	pos     int
	out     []byte
	keys    []byte // decoded member names, used as a stack
	members []member
	path    []frame
	scratch []byte
	opts    canonOptions

	key    []byte // decoded value of opts.keyMember, when found
	hasKey bool
	keyErr string
}

// canonicalize reads one JSON text strictly and returns its canonical form.
func (c *canonicalizer) canonicalize(in []byte, opts canonOptions) ([]byte, error) {
	c.in, c.pos, c.opts = in, 0, opts
	c.out = c.out[:0]
	c.keys = c.keys[:0]
	c.members = c.members[:0]
	c.path = c.path[:0]
	c.key, c.hasKey, c.keyErr = nil, false, ""
	c.skipSpace()
	if c.pos >= len(c.in) {
		return nil, c.fail("empty input: no JSON value")
	}
	if opts.definition && c.in[c.pos] != '{' {
		return nil, c.fail("a definition must be a JSON object")
	}
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return nil, c.fail("unexpected data after the JSON value")
	}
	return c.out, nil
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value reads the value at c.pos (no leading space) and appends its
// canonical form to c.out.
func (c *canonicalizer) value(depth int) error {
	if c.pos >= len(c.in) {
		return c.fail("unexpected end of input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		c.out = append(c.out, '"')
		var err error
		c.out, err = c.str(c.out, true)
		if err != nil {
			return err
		}
		c.out = append(c.out, '"')
		return nil
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	default:
		return c.fail("invalid character " + jsonscan.QuoteByte(b) + " where a value was expected")
	}
}

func (c *canonicalizer) literal(lit string) error {
	if len(c.in)-c.pos < len(lit) || string(c.in[c.pos:c.pos+len(lit)]) != lit {
		return c.fail("invalid literal (only true, false and null are JSON literals)")
	}
	c.pos += len(lit)
	c.out = append(c.out, lit...)
	return nil
}

func (c *canonicalizer) array(depth int) error {
	if depth > MaxDepth {
		return c.fail("nesting deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	c.pos++ // [
	c.out = append(c.out, '[')
	c.path = append(c.path, frame{array: true})
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		c.path = c.path[:len(c.path)-1]
		return nil
	}
	for i := 0; ; i++ {
		c.path[len(c.path)-1].index = i
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.skipSpace()
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.fail("unexpected end of input in an array")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			c.path = c.path[:len(c.path)-1]
			return nil
		default:
			return c.fail("expected ',' or ']' in an array, found " + jsonscan.QuoteByte(c.in[c.pos]))
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	if depth > MaxDepth {
		return c.fail("nesting deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	c.pos++ // {
	objStart := len(c.out)
	c.out = append(c.out, '{')
	base := len(c.members)
	keyMark := len(c.keys)
	c.path = append(c.path, frame{})
	top := depth == 1 && c.opts.definition
	emitted := 0
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		c.path = c.path[:len(c.path)-1]
		return nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			if c.pos >= len(c.in) {
				return c.fail("unexpected end of input in an object")
			}
			return c.fail("expected a member name, found " + jsonscan.QuoteByte(c.in[c.pos]))
		}
		keyStart := len(c.keys)
		var err error
		c.keys, err = c.str(c.keys, false)
		if err != nil {
			return err
		}
		keyEnd := len(c.keys)
		f := &c.path[len(c.path)-1]
		f.keyStart, f.keyEnd = keyStart, keyEnd
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return c.fail("expected ':' after a member name")
		}
		c.pos++
		c.skipSpace()

		if emitted > 0 {
			c.out = append(c.out, ',')
		}
		outStart := len(c.out)
		c.out = appendCanonicalString(c.out, c.keys[keyStart:keyEnd])
		c.out = append(c.out, ':')
		valStart := len(c.out)
		if err := c.value(depth); err != nil {
			return err
		}
		drop := false
		if top {
			switch name := string(c.keys[keyStart:keyEnd]); {
			case name == "_meta":
				drop = true
			case name == c.opts.keyMember:
				c.captureKey(c.out[valStart:])
			}
		}
		if drop {
			// The member was read strictly; it is left out of the output.
			// Drop the separator written before it too.
			if emitted > 0 {
				outStart--
			}
			c.out = c.out[:outStart]
			// Keep its name for the duplicate check.
			c.members = append(c.members, member{keyStart: keyStart, keyEnd: keyEnd, outStart: -1})
		} else {
			c.members = append(c.members, member{keyStart: keyStart, keyEnd: keyEnd, outStart: outStart, outEnd: len(c.out)})
			emitted++
		}

		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.fail("unexpected end of input in an object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return c.fail("expected ',' or '}' in an object, found " + jsonscan.QuoteByte(c.in[c.pos]))
		}
		c.pos++
		break
	}
	if err := c.finishObject(objStart, base); err != nil {
		return err
	}
	c.members = c.members[:base]
	c.keys = c.keys[:keyMark]
	c.path = c.path[:len(c.path)-1]
	return nil
}

// finishObject sorts the members of the object that starts at objStart by
// their names' UTF-16 code units (RFC 8785 section 3.2.3), refuses a
// repeated name, and rewrites the object in that order.
func (c *canonicalizer) finishObject(objStart, base int) error {
	ms := c.members[base:]
	sorted := true
	for i := 1; i < len(ms); i++ {
		if c.compareKeys(ms[i-1], ms[i]) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(ms, c.compareKeys)
		for i := 1; i < len(ms); i++ {
			if c.compareKeys(ms[i-1], ms[i]) == 0 {
				f := &c.path[len(c.path)-1]
				f.keyStart, f.keyEnd = ms[i].keyStart, ms[i].keyEnd
				return c.failAt(-1, "repeated member name "+textsafe.RawQuote(string(c.keys[ms[i].keyStart:ms[i].keyEnd])))
			}
		}
		c.scratch = append(c.scratch[:0], c.out[objStart:]...)
		c.out = c.out[:objStart+1]
		n := 0
		for _, m := range ms {
			if m.outStart < 0 {
				continue
			}
			if n > 0 {
				c.out = append(c.out, ',')
			}
			n++
			c.out = append(c.out, c.scratch[m.outStart-objStart:m.outEnd-objStart]...)
		}
	}
	c.out = append(c.out, '}')
	return nil
}

func (c *canonicalizer) compareKeys(a, b member) int {
	return compareUTF16(c.keys[a.keyStart:a.keyEnd], c.keys[b.keyStart:b.keyEnd])
}

// captureKey records the definition's key from the canonical bytes of its
// value; canonical strings are decoded by the same strict reader.
func (c *canonicalizer) captureKey(canon []byte) {
	if len(canon) == 0 || canon[0] != '"' {
		c.keyErr = "member " + textsafe.RawQuote(c.opts.keyMember) + " is not a string"
		return
	}
	var d canonicalizer
	d.in = canon
	d.pos = 0
	v, err := d.str(nil, false)
	if err != nil {
		c.keyErr = err.Error()
		return
	}
	c.key, c.hasKey = v, true
}

// str reads the string at c.pos (the opening quote) and appends its content
// to dst: in canonical escaped form when canonical is set, decoded otherwise.
func (c *canonicalizer) str(dst []byte, canonical bool) ([]byte, error) {
	c.pos++ // opening quote
	start := c.pos
	in := c.in
	// Fast path: no escapes. Raw content that is valid UTF-8 with no control
	// characters is already canonical.
	for c.pos < len(in) {
		b := in[c.pos]
		switch {
		case b == '"':
			dst = append(dst, in[start:c.pos]...)
			c.pos++
			return dst, nil
		case b == '\\':
			return c.strSlow(dst, start, canonical)
		case b < 0x20:
			return dst, c.fail("unescaped control character " + jsonscan.QuoteByte(b) + " in a string")
		case b < utf8.RuneSelf:
			c.pos++
		default:
			r, size := utf8.DecodeRune(in[c.pos:])
			if r == utf8.RuneError && size <= 1 {
				return dst, c.fail("invalid UTF-8 in a string")
			}
			c.pos += size
		}
	}
	return dst, c.fail("unterminated string")
}

// strSlow handles a string with escapes: it decodes the whole string into
// scratch space and writes it out again, canonically escaped if asked.
func (c *canonicalizer) strSlow(dst []byte, start int, canonical bool) ([]byte, error) {
	decoded := append([]byte(nil), c.in[start:c.pos]...)
	in := c.in
	for c.pos < len(in) {
		b := in[c.pos]
		switch {
		case b == '"':
			c.pos++
			if canonical {
				return appendEscaped(dst, decoded), nil
			}
			return append(dst, decoded...), nil
		case b == '\\':
			if c.pos+1 >= len(in) {
				return dst, c.fail("unterminated escape")
			}
			e := in[c.pos+1]
			c.pos += 2
			switch e {
			case '"', '\\', '/':
				decoded = append(decoded, e)
			case 'b':
				decoded = append(decoded, '\b')
			case 'f':
				decoded = append(decoded, '\f')
			case 'n':
				decoded = append(decoded, '\n')
			case 'r':
				decoded = append(decoded, '\r')
			case 't':
				decoded = append(decoded, '\t')
			case 'u':
				r, err := c.unicodeEscape()
				if err != nil {
					return dst, err
				}
				decoded = utf8.AppendRune(decoded, r)
			default:
				c.pos -= 2
				return dst, c.fail("invalid escape \\" + string(rune(e)))
			}
		case b < 0x20:
			return dst, c.fail("unescaped control character " + jsonscan.QuoteByte(b) + " in a string")
		case b < utf8.RuneSelf:
			decoded = append(decoded, b)
			c.pos++
		default:
			r, size := utf8.DecodeRune(in[c.pos:])
			if r == utf8.RuneError && size <= 1 {
				return dst, c.fail("invalid UTF-8 in a string")
			}
			decoded = append(decoded, in[c.pos:c.pos+size]...)
			c.pos += size
		}
	}
	return dst, c.fail("unterminated string")
}

// unicodeEscape reads the four hex digits after \u (and a following \uXXXX
// low surrogate when the first is a high one) and returns the code point.
// Lone and reversed surrogates are refused (RFC 8785 section 3.2.2.2).
func (c *canonicalizer) unicodeEscape() (rune, error) {
	r1, ok := hex4(c.in, c.pos)
	if !ok {
		c.pos -= 2
		return 0, c.fail("invalid \\u escape: four hex digits expected")
	}
	c.pos += 4
	switch {
	case r1 >= 0xDC00 && r1 <= 0xDFFF:
		c.pos -= 6
		return 0, c.fail("lone low surrogate \\u" + strconv.FormatInt(int64(r1), 16) + " (a low surrogate must follow a high one)")
	case r1 >= 0xD800 && r1 <= 0xDBFF:
		if c.pos+6 > len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
			c.pos -= 6
			return 0, c.fail("lone high surrogate \\u" + strconv.FormatInt(int64(r1), 16))
		}
		r2, ok := hex4(c.in, c.pos+2)
		if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
			c.pos -= 6
			return 0, c.fail("high surrogate \\u" + strconv.FormatInt(int64(r1), 16) + " not followed by a low surrogate")
		}
		c.pos += 6
		return 0x10000 + (r1-0xD800)<<10 + (r2 - 0xDC00), nil
	}
	return r1, nil
}

func hex4(in []byte, at int) (rune, bool) {
	if at+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, b := range in[at : at+4] {
		r <<= 4
		switch {
		case b >= '0' && b <= '9':
			r |= rune(b - '0')
		case b >= 'a' && b <= 'f':
			r |= rune(b - 'a' + 10)
		case b >= 'A' && b <= 'F':
			r |= rune(b - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads an RFC 8259 number and appends its RFC 8785 form: the
// ECMAScript Number.prototype.toString of the nearest IEEE 754 double, as
// gowebpki/jcs formats it.
func (c *canonicalizer) number() error {
	start := c.pos
	p, reason := jsonscan.NumberEnd(c.in, start)
	if reason != "" {
		return c.fail(reason)
	}
	intDigits, simple := p-start, true
	for i, b := range c.in[start:p] {
		if b == '.' || b == 'e' || b == 'E' {
			intDigits, simple = i, false
			break
		}
	}
	tok := c.in[start:p]
	c.pos = p
	// Integers of at most 15 digits are exact doubles below 2^53 and are
	// already in canonical form, but for "-0".
	if simple && intDigits <= 15 {
		if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
			c.out = append(c.out, '0')
		} else {
			c.out = append(c.out, tok...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		c.pos = start
		return c.fail("number out of range: not a finite IEEE 754 double")
	}
	if c.opts.safeNumbers && math.Abs(f) >= maxSafeInteger {
		c.pos = start
		return c.fail("number magnitude is 2^53 or more (not exactly representable everywhere)")
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		c.pos = start
		return c.fail("number cannot be serialized: " + err.Error())
	}
	c.out = append(c.out, s...)
	return nil
}

// appendCanonicalString appends s (decoded, valid UTF-8) as a canonical JSON
// string with its quotes.
func appendCanonicalString(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped escapes decoded string content as RFC 8785 requires: the
// two-character escapes for ", \, \b, \f, \n, \r, \t; \u00xx (lowercase) for
// the other control characters; everything else as UTF-8.
func appendEscaped(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	last := 0
	for i, b := range s {
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		last = i + 1
	}
	return append(dst, s[last:]...)
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts member names.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the code point in which they differ.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return utf16Weight(ra) - utf16Weight(rb)
}

// utf16Weight maps a code point to a number that orders like its UTF-16
// encoding: code points from U+E000 to U+FFFF sort after every supplementary
// character, whose high surrogate is below U+E000.
func utf16Weight(r rune) int {
	if r >= 0xE000 && r <= 0xFFFF {
		return int(r) + 0x110000
	}
	return int(r)
}
