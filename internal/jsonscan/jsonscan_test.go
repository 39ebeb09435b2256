package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanAll reads one value that must be the whole of data.
func scanAll(data []byte, escapes bool, maxDepth int) error {
	s := &Scanner{In: data, MaxDepth: maxDepth, Escapes: escapes}
	s.Space()
	if _, err := s.Value(0); err != nil {
		return err
	}
	s.Space()
	if s.Pos != len(data) {
		return s.Fail("unexpected data after the value")
	}
	return nil
}

func TestScanner(t *testing.T) {
	tests := []struct {
		in      string
		escapes bool
		err     string
	}{
		{`{"a":[1,-0.5e+3,true,false,null,"x\n\u00e9"],"b":{}}`, true, ""},
		{` [ ] `, true, ""},
		{`{"a":"\x"}`, true, "invalid escape 'x'"},
		{`{"a":"\x"}`, false, ""}, // left to whoever decodes it
		{`"\u12"`, true, `invalid \u escape`},
		{`01`, true, "leading zero"},
		{`-`, true, "digits expected after '-'"},
		{`1.`, true, "digits expected after '.'"},
		{`1e`, true, "digits expected in the exponent"},
		{`1x`, true, "unexpected 'x' in a number"},
		{"\"a\x01\"", true, "unescaped control character"},
		{`"abc`, true, "unterminated string"},
		{`{"a" 1}`, true, "expected ':'"},
		{`{"a":1,}`, true, "expected a member name"},
		{`[1 2]`, true, "expected ',' or ']'"},
		{`{"a":1 "b":2}`, true, "expected ',' or '}'"},
		{`tru`, true, "invalid character 't'"},
		{`[[[1]]]`, true, ""},
		{`[[[[1]]]]`, true, "nesting deeper than 3 levels"},
	}
	for _, tc := range tests {
		err := scanAll([]byte(tc.in), tc.escapes, 3)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestObjectSpans(t *testing.T) {
	data := []byte(`{"a" : [1, 2] , "b\"c":{"d":null}}`)
	s := &Scanner{In: data, MaxDepth: 10, Escapes: true}
	var got []string
	err := s.Object(0, func(name Span) error {
		v, err := s.Value(1)
		got = append(got, string(data[name.Start:name.End])+"="+string(data[v.Start:v.End]))
		return err
	})
	if err != nil || strings.Join(got, ";") != `a=[1, 2];b\"c={"d":null}` {
		t.Errorf("%q, %v", got, err)
	}
}

// FuzzScanner checks the scanner with escapes checked against
// encoding/json: both accept exactly the same texts (within the depth
// bound), and a value's span is the whole text.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud800"`, `[1e5,-0,0.1]`, `{"a":"\x"}`, `01`, `[`, `"\u00zz"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := scanAll(data, true, 1000)
		valid := json.Valid(data)
		if (err == nil) != valid {
			t.Fatalf("scanner %v, encoding/json valid %v: %q", err, valid, data)
		}
	})
}

// FuzzSkipDeep: a scanner that skips deep values (SkipDeep) accepts
// exactly the texts encoding/json accepts, however shallow its MaxDepth,
// and ends where the value ends.
func FuzzSkipDeep(f *testing.F) {
	for _, s := range []string{`[[[1]]]`, `{"a":[{"b":{}}],"c":"\u0041"}`, `[[[`, `[1,]`, `{"a" 1}`, `[[[]]]]`, `[{"a":1,}]`, `[[["\x"]]]`, `[[[1e5, -0.5, true, null, "s"]]]`, `{"a":{"b":{"c":[]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 || !utf8.Valid(data) {
			return
		}
		for _, max := range []int{0, 1, 2} {
			s := &Scanner{In: data, MaxDepth: max, Escapes: true, SkipDeep: true}
			s.Space()
			_, err := s.Value(0)
			if err == nil {
				s.Space()
				if s.Pos != len(data) {
					err = s.Fail("trailing data")
				}
			}
			if (err == nil) != json.Valid(data) {
				t.Fatalf("MaxDepth %d: scanner err %v, encoding/json valid %v: %q", max, err, json.Valid(data), data)
			}
		}
	})
}

// BenchmarkLongString scans one 1 MiB string of plain ASCII, as a bundle
// advertised inline holds (docs/TESTING.md, "Test run time").
func BenchmarkLongString(b *testing.B) {
	data := []byte(`"` + strings.Repeat("a", 1<<20) + `"`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := scanAll(data, true, 10); err != nil {
			b.Fatal(err)
		}
	}
}
