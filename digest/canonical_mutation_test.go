package digest

import (
	"errors"
	"strings"
	"testing"
)

// TestCanonicalizePrefixes: every strict prefix of a valid JSON text is
// refused with a SyntaxError, never a panic (each bound of the reader is
// checked where the input can end), and the whole text is read.
func TestCanonicalizePrefixes(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"a":[1,true,false,null,"x\u00e9\ud83d\ude00y",{"b":{}}],"c":-1.5e3,"d":[]}`,
		`[{"k":"v"},[[]],"\n\"\\",0]`,
		`{"": {"\u0041": "é\u0000"}}`,
	} {
		if _, err := Canonicalize([]byte(doc)); err != nil {
			t.Fatalf("Canonicalize(%s): %v", doc, err)
		}
		for i := range len(doc) {
			_, err := Canonicalize([]byte(doc[:i]))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("Canonicalize(%q) = %v, want a SyntaxError", doc[:i], err)
			}
		}
	}
}

// TestCanonicalizeDepthBound: MaxDepth nested arrays or objects are read,
// one more is refused.
func TestCanonicalizeDepthBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ open, close string }{{"[", "]"}, {`{"a":`, "}"}} {
		for depth, ok := range map[int]bool{MaxDepth: true, MaxDepth + 1: false} {
			doc := strings.Repeat(tc.open, depth) + "1" + strings.Repeat(tc.close, depth)
			if _, err := Canonicalize([]byte(doc)); (err == nil) != ok {
				t.Errorf("%s nested %d deep: %v, want accepted: %v", tc.open, depth, err, ok)
			}
		}
	}
}

// TestCanonicalizeStrings: a surrogate pair is read at both ends of the
// low surrogates' range, a lone or wrongly paired surrogate is refused;
// invalid UTF-8 is refused and U+FFFD written as UTF-8 is read.
func TestCanonicalizeStrings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want "" when refused
	}{
		{`"\ud800\udc00"`, "\"\U00010000\""},
		{`"\udbff\udfff"`, "\"\U0010FFFF\""},
		{`"\ud800\udbff"`, ""},
		{`"\ud800\ue000"`, ""},
		{`"\ud800x"`, ""},
		{`"\udc00"`, ""},
		{"\"a\xffb\"", ""},
		{"\"\xef\xbf\xbd\"", "\"\xef\xbf\xbd\""},
		{"\"\xc3\xa9\"", "\"é\""},
		// The same after an escape (the reader's second path).
		{"\"\\n\xff\"", ""},
		{"\"\\n\xef\xbf\xbd\"", "\"\\n\xef\xbf\xbd\""},
	} {
		got, err := Canonicalize([]byte(tc.in))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("Canonicalize(%q) = %q, want refused", tc.in, got)
		case tc.want != "" && (err != nil || string(got) != tc.want):
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCanonicalizeKeyOrder: members are sorted by their names' UTF-16
// code units (RFC 8785 section 3.2.3): a supplementary character (a high
// surrogate, from U+D800) sorts before U+E000 to U+FFFF, after U+D7FF.
func TestCanonicalizeKeyOrder(t *testing.T) {
	t.Parallel()
	in := "{\"\uffff\":4,\"\ue000\":3,\"\U00010000\":2,\"\ud7ff\":1,\"b\":0,\"a\":0}"
	want := "{\"a\":0,\"b\":0,\"\ud7ff\":1,\"\U00010000\":2,\"\ue000\":3,\"\uffff\":4}"
	got, err := Canonicalize([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("Canonicalize = %q, %v; want %q", got, err, want)
	}
}

// TestSyntaxErrorText: the error names where: the top level, or the
// member's JSON pointer, and the byte.
func TestSyntaxErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"a":2}`, "repeated member name \"a\" at /a (byte 13)"}, // found when the object closes
		{`{"x/y":{"k":tru}}`, "at /x~1y/k (byte 12)"},
		{`[1,`, "at /1 (byte 3)"},
		{`{"a":[],"b":{},"c":tru}`, "at /c (byte 19)"}, // an empty array and object leave the path as it was
		{`nul`, "at the top level (byte 0)"},
		// A member named "" is the token "" (RFC 6901: "/" is its pointer).
		{`{"":tru}`, "at / (byte 4)"},
		{`{"":{"":[1,tru]}}`, "at ///1 (byte 11)"},
		{`"\ud800\udc00`, "unterminated string"}, // a whole pair, then the end
		{`"\ud800\u00`, "lone high surrogate"},
	} {
		_, err := Canonicalize([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Canonicalize(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestDefinitionDigestMeta: a definition's _meta is left out of its
// digest wherever it stands among the members, its separator with it.
func TestDefinitionDigestMeta(t *testing.T) {
	t.Parallel()
	want, err := DefinitionDigest([]byte(`{"name":"t","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{
		`{"_meta":{"x":1},"name":"t","inputSchema":{"type":"object"}}`,
		`{"name":"t","_meta":{"x":1},"inputSchema":{"type":"object"}}`,
		`{"name":"t","inputSchema":{"type":"object"},"_meta":{"x":1}}`,
	} {
		if got, err := DefinitionDigest([]byte(def)); err != nil || got != want {
			t.Errorf("DefinitionDigest(%s) = %s, %v; want %s", def, got, err, want)
		}
	}
}
