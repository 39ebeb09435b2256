package digest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// TestPinningDraftVectors reproduces every published tool vector of the
// client-held pinning draft; the ones without an expected digest must be
// refused.
func TestPinningDraftVectors(t *testing.T) {
	data, err := os.ReadFile(shareddata.Path(t, "digest/pinning-draft-tool-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name     string          `json:"name"`
		Tool     json.RawMessage `json:"tool"`
		Expected *string         `json:"expected"`
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) != 16 {
		t.Fatalf("want 16 vectors, found %d", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, err := DefinitionDigest(v.Tool)
			if v.Expected == nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("want refusal with a SyntaxError, got digest %q err %v", got, err)
				}
				if !strings.Contains(se.Reason, "2^53") || se.Pointer == "" {
					t.Errorf("refusal should name the number and its pointer: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != *v.Expected {
				t.Errorf("digest %s, want %s", got, *v.Expected)
			}
		})
	}
}

// TestRFC8785Vectors canonicalizes every input of the RFC 8785 test set and
// compares with the expected output and its published SHA-256.
func TestRFC8785Vectors(t *testing.T) {
	dir := shareddata.Path(t, "jcs")
	sums := map[string]string{}
	tsv, err := os.ReadFile(filepath.Join(dir, "expected-sha256-of-output.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n") {
		f := strings.Fields(line)
		sums[f[0]] = f[1]
	}
	inputs, _ := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	if len(inputs) != len(sums) || len(inputs) == 0 {
		t.Fatalf("%d inputs, %d expected sums", len(inputs), len(sums))
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			data, _ := os.ReadFile(in)
			want, err := os.ReadFile(filepath.Join(dir, "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(data)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %q\nwant %q", got, want)
			}
			sum := sha256.Sum256(got)
			if hex.EncodeToString(sum[:]) != sums[name] {
				t.Errorf("sha256 of output differs from the published one")
			}
		})
	}
}

// es6NumbersSHA256 is the SHA-256 of es6testfile100k.txt, the 100,000 lines
// "IEEE 754 bits in hex,ES6 serialization" of the RFC 8785 number test file
// (testdata/SOURCES.md). The repository keeps only the first column
// (es6testfile100k.bits.gz): the test rebuilds every line from the bits and
// the serialization under test, so the file's hash holds only if every
// line is what an ES6 engine printed.
const es6NumbersSHA256 = "22776e6d4b49fa294a0d0f349268e5c28808fe7e0cb2bcbe28f63894e494d4c7"

// TestES6Numbers checks all 100,000 lines of the ES6 number test file.
func TestES6Numbers(t *testing.T) {
	t.Parallel() // the longest of the package, under -race most of all
	f, err := os.Open(shareddata.Path(t, "jcs/es6numbers/es6testfile100k.bits.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	file := sha256.New()
	var bits []uint64
	var nums []string
	for sc.Scan() {
		hexBits := sc.Text()
		b, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("line %d: %v", len(bits)+1, err)
		}
		// Feed the shortest round-trip spelling of the double through the
		// reader, as a JSON number in an array.
		in := "[" + strconv.FormatFloat(math.Float64frombits(b), 'g', -1, 64) + "]"
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Fatalf("line %d %s: %v", len(bits)+1, in, err)
		}
		num := strings.TrimSuffix(strings.TrimPrefix(string(got), "["), "]")
		fmt.Fprintf(file, "%s,%s\n", hexBits, num)
		bits, nums = append(bits, b), append(nums, num)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bits) != 100000 {
		t.Fatalf("read %d lines, want 100000", len(bits))
	}
	if got := hex.EncodeToString(file.Sum(nil)); got != es6NumbersSHA256 {
		// Name the first line that differs from gowebpki/jcs, which
		// serializes all of them as the file says (docs/DIGEST.md).
		for i, b := range bits {
			if want, err := jcs.NumberToJSON(math.Float64frombits(b)); err != nil || nums[i] != want {
				t.Fatalf("line %d (%016x): %s, gowebpki/jcs %s (%v)", i+1, b, nums[i], want, err)
			}
		}
		t.Fatalf("the serializations differ from es6testfile100k.txt: sha256 %s, want %s", got, es6NumbersSHA256)
	}
}

// TestInvalidJSONRefused refuses every file of the invalid set, including
// those gowebpki/jcs lets through.
func TestInvalidJSONRefused(t *testing.T) {
	dir := shareddata.Path(t, "jcs/invalid")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) < 25 {
		t.Fatalf("found only %d invalid files", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, _ := os.ReadFile(file)
			out, err := Canonicalize(data)
			if err == nil {
				t.Fatalf("accepted, gave %q", out)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a SyntaxError", err)
			}
		})
	}
}

// TestAgreesWithJCS checks, on hand-picked inputs, that our canonical form
// is exactly what gowebpki/jcs produces.
func TestAgreesWithJCS(t *testing.T) {
	inputs := []string{
		`{"b":1,"a":2,"c":{"z":[1,2.50,-0,1e2,0.000001,1e-7,123456789012345678]}}`,
		`{"\u00e9":1,"e":2,"\ud83d\ude00":3,"\uffff":4,"\u20ac":5}`,
		`{"s":"\u0000\u001f\u007f\"\\/\b\f\n\r\t \u2028 \ud834\udd1e"}`,
		`[true,false,null,"",{},[]]`,
		`  {"a" : [ 1 , 2 ] }  `,
		`{"a":"\/"}`,
		`9007199254740993`,
		`-1.5e+300`,
		`{"_meta":{"x":1},"a":1}`,
	}
	for _, in := range inputs {
		want, err := jcs.Transform([]byte(in))
		if err != nil {
			t.Fatalf("jcs refuses %s: %v", in, err)
		}
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s\n got  %q\n jcs  %q", in, got, want)
		}
	}
}

// TestDefinitionRefusals names the pointer of the offending value.
func TestDefinitionRefusals(t *testing.T) {
	tests := []struct {
		name, in, pointer, reason string
	}{
		{"repeated nested member", `{"name":"a","inputSchema":{"type":"object","type":"string"}}`, "/inputSchema/type", "repeated member name"},
		{"repeated escaped member", `{"name":"a","x":1,"\u0078":2}`, "/x", "repeated member name"},
		{"repeated top member", `{"name":"a","description":"x","description":"y"}`, "/description", "repeated member name"},
		{"repeated _meta", `{"name":"a","_meta":{},"_meta":{}}`, "/_meta", "repeated member name"},
		{"invalid utf8", "{\"name\":\"a\",\"description\":\"bad \xff\"}", "/description", "invalid UTF-8"},
		{"lone high surrogate", `{"name":"a","d":["ok","\ud800"]}`, "/d/1", "lone high surrogate"},
		{"reversed pair", `{"name":"a","d":"\udc00\ud800"}`, "/d", "lone low surrogate"},
		{"big number", `{"name":"a","inputSchema":{"maximum":1e20}}`, "/inputSchema/maximum", "2^53"},
		{"plus sign", `{"name":"a","n":+1}`, "/n", "invalid character"},
		{"leading zero", `{"name":"a","n":01}`, "/n", "leading zero"},
		{"hex", `{"name":"a","n":0x10}`, "/n", "invalid number"},
		{"leading dot", `{"name":"a","n":.5}`, "/n", "invalid character"},
		{"trailing dot", `{"name":"a","n":1.}`, "/n", "after '.'"},
		{"infinity", `{"name":"a","n":1e400}`, "/n", "not a finite"},
		{"not an object", `["name"]`, "", "must be a JSON object"},
		{"pointer escaping", `{"name":"a","a/b":{"c~d":"\ud800"}}`, "/a~1b/c~0d", "surrogate"},
		{"trailing data", `{"name":"a"} {}`, "", "after the JSON value"},
		{"too deep", `{"name":"a","x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`, "", "nesting deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DefinitionDigest([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want SyntaxError, got %v", err)
			}
			if !strings.Contains(se.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", se.Reason, tt.reason)
			}
			if tt.pointer != "" && !strings.HasPrefix(se.Pointer, tt.pointer) {
				t.Errorf("pointer %q, want %q", se.Pointer, tt.pointer)
			}
		})
	}
}

// TestMetaRemoval removes only the top-level _meta, wherever it stands.
func TestMetaRemoval(t *testing.T) {
	base, err := DefinitionDigest([]byte(`{"name":"a","x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"_meta":{"v":1},"name":"a","x":1}`,
		`{"name":"a","_meta":null,"x":1}`,
		`{"name":"a","x":1,"_meta":[1,2]}`,
		`{"x":1,"_meta":"z","name":"a"}`,
	} {
		got, err := DefinitionDigest([]byte(in))
		if err != nil || got != base {
			t.Errorf("%s: got %s %v, want %s", in, got, err, base)
		}
	}
	nested, _ := DefinitionDigest([]byte(`{"name":"a","x":{"_meta":1}}`))
	plain, _ := DefinitionDigest([]byte(`{"name":"a","x":{}}`))
	if nested == plain {
		t.Error("nested _meta must be covered by the digest")
	}
}

func TestSetAndInstructionsDigest(t *testing.T) {
	if got := SetDigest(nil); got != EmptySetDigest {
		t.Errorf("empty set %s, want %s", got, EmptySetDigest)
	}
	a := KeyDigest{"a", "sha256:" + strings.Repeat("1", 64)}
	b := KeyDigest{"b", "sha256:" + strings.Repeat("0", 64)}
	if SetDigest([]KeyDigest{a, b}) != SetDigest([]KeyDigest{b, a}) {
		t.Error("set digest depends on order")
	}
	// Sorted by key, not by digest: the array is [a's digest, b's digest].
	want := hashHex([]byte(`["` + a.Digest + `","` + b.Digest + `"]`))
	if got := SetDigest([]KeyDigest{b, a}); got != want {
		t.Errorf("set digest %s, want %s", got, want)
	}
	if got := InstructionsDigest("héllo"); got != hashHex([]byte("héllo")) {
		t.Error("instructions digest is not SHA-256 of the UTF-8 bytes")
	}
}

func TestCompute(t *testing.T) {
	ins := "Use the tools."
	s := &Snapshot{
		Instructions: &ins,
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"b","inputSchema":{}}`),
			json.RawMessage(`{"name":"a","inputSchema":{}}`),
		},
		Prompts:           []json.RawMessage{json.RawMessage(`{"name":"p"}`)},
		ResourceTemplates: []json.RawMessage{json.RawMessage(`{"uriTemplate":"notes://{id}","name":"note"}`)},
	}
	r := Compute(s)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Definitions) != 4 || r.Definitions[0].Key != "a" || r.Definitions[1].Key != "b" {
		t.Fatalf("definitions not sorted by kind then key: %+v", r.Definitions)
	}
	if r.Definitions[3].Key != "notes://{id}" {
		t.Errorf("resource template keyed by %q", r.Definitions[3].Key)
	}
	if r.Sets[KindTool] == "" || r.Sets[KindPrompt] == "" || r.Sets[KindResourceTemplate] == "" {
		t.Errorf("missing set digests: %v", r.Sets)
	}
	if r.Instructions != InstructionsDigest(ins) {
		t.Error("instructions digest")
	}

	// Duplicates withhold every copy and the set; invalid definitions are
	// named; other kinds keep their sets.
	bad := &Snapshot{Tools: []json.RawMessage{
		json.RawMessage(`{"name":"dup","x":1}`),
		json.RawMessage(`{"name":"dup","x":2}`),
		json.RawMessage(`{"name":"ok"}`),
		json.RawMessage(`{"description":"no name"}`),
		json.RawMessage(`{"name":5}`),
		json.RawMessage(`{"name":""}`),
		json.RawMessage("{\"name\":\"u\",\"d\":\"\xff\"}"),
	}}
	r = Compute(bad)
	var ie *InvalidDefinitionsError
	if !errors.As(r.Err(), &ie) || len(ie.Errors) != 6 {
		t.Fatalf("want 6 invalid definitions, got %v", r.Err())
	}
	if _, ok := r.Sets[KindTool]; ok {
		t.Error("a kind with invalid definitions must have no set digest")
	}
	if r.Sets[KindPrompt] != EmptySetDigest {
		t.Error("empty prompts should have the empty set digest")
	}
	dups := 0
	for _, e := range ie.Errors {
		if errors.Is(e, ErrDuplicateKey) {
			dups++
		}
		if e.Key == "u" && !strings.Contains(e.Error(), `tool "u"`) {
			t.Errorf("invalid definition not named by key: %v", e)
		}
	}
	if dups != 2 {
		t.Errorf("want both copies of dup withheld, got %d", dups)
	}
	if _, ok := r.Lookup(KindTool, "ok"); !ok {
		t.Error("valid definition lost")
	}
}
