package digest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

func addSeeds(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"number","maximum":1.5e3}}}}`,
		`{"_meta":{"a":1},"name":"b","x":[true,false,null,-0,0.1,1e-7]}`,
		`{"name":"\u00e9\ud83d\ude00","\u20ac":"\u0000","e":"\/"}`,
		`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\udc00\ud800"}`, `[1e400]`, `{"n":9007199254740992}`,
	} {
		f.Add([]byte(s))
	}
	if d := shareddata.Dir(); d != "" {
		for _, dir := range []string{"jcs/input", "jcs/invalid"} {
			files, _ := filepath.Glob(filepath.Join(d, dir, "*.json"))
			for _, file := range files {
				if b, err := os.ReadFile(file); err == nil {
					f.Add(b)
				}
			}
		}
	}
}

// FuzzCanonicalize: no panic; whatever the strict reader accepts,
// gowebpki/jcs accepts and serializes to the same bytes; the canonical form
// is a fixed point.
func FuzzCanonicalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		want, jerr := jcs.Transform(in)
		if jerr != nil {
			t.Fatalf("strict reader accepted what JCS refuses (%v): %q", jerr, in)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("canonical form differs from JCS for %q:\n ours %q\n jcs  %q", in, out, want)
		}
		again, err := Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form is not a fixed point: %q -> %q (%v)", out, again, err)
		}
	})
}

// FuzzDefinitionDigest: no panic; the digest does not change when members
// are reordered and whitespace is added.
func FuzzDefinitionDigest(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := DefinitionDigest(in)
		if err != nil {
			return
		}
		if !ValidDigest(d) {
			t.Fatalf("malformed digest %q", d)
		}
		re := reorder(t, in)
		d2, err := DefinitionDigest(re)
		if err != nil || d2 != d {
			t.Fatalf("digest changed under reordering: %q -> %q (%v)", in, re, err)
		}
	})
}

// reorder writes v again with object members in reverse order and extra
// whitespace, keeping every token's spelling.
func reorder(t *testing.T, in []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot read accepted input %q: %v", in, err)
	}
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			// Reverse byte order, the opposite of what JCS sorts to.
			for i := range keys {
				for j := i + 1; j < len(keys); j++ {
					if keys[j] > keys[i] {
						keys[i], keys[j] = keys[j], keys[i]
					}
				}
			}
			b.WriteString("{ ")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(" ,\n ")
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteString(" :\t")
				write(x[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, e := range x {
				if i > 0 {
					b.WriteString(" , ")
				}
				write(e)
			}
			b.WriteString(" ]")
		default:
			vb, _ := json.Marshal(x)
			b.Write(vb)
		}
	}
	write(v)
	return []byte(b.String())
}

// FuzzSplitList: no panic on any list result; items are subslices that
// the snapshot writer can carry.
func FuzzSplitList(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a"}],"nextCursor":"x"}`))
	f.Add([]byte(`{"tools":[1,"x",{"a":[{}]}]}`))
	f.Add([]byte(`{"tools":[],"tools":[]}`))
	f.Add([]byte(`{"tools":[{"name":"a"}],"Tools":[{"name":"evil"}]}`))
	f.Add([]byte("{\"tool\u017f\":[],\"tools\":[{\"name\":\"a\"}]}"))
	f.Add([]byte(`{"tools":[],"nextCursor":"a","NextCursor":"b"}`))
	f.Add([]byte(`{"tools":[],"resources":[{"uri":"a"}],"Resources":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		items, cursor, hasNext, err := SplitList(KindTool, in)
		if err != nil {
			return
		}
		for _, it := range items {
			if !bytes.Contains(in, it) {
				t.Fatalf("item %q is not from the input", it)
			}
		}
		// A case-insensitive reader (encoding/json, as go-sdk reads a
		// result) sees the same definitions and cursor.
		var lenient struct {
			Tools      []json.RawMessage
			NextCursor *string
		}
		if json.Unmarshal(in, &lenient) == nil {
			if len(lenient.Tools) != len(items) || (lenient.NextCursor != nil) != hasNext || (hasNext && *lenient.NextCursor != cursor) {
				t.Fatalf("a lenient reader reads %d tools, cursor %v; SplitList %d, %q %v", len(lenient.Tools), lenient.NextCursor, len(items), cursor, hasNext)
			}
		}
	})
}

// FuzzParseSnapshot: no panic; an accepted file writes and reads back to
// the same digests, and a lenient reader (encoding/json, which matches
// member names without regard to case) sees the same instructions, server
// and definitions in it.
func FuzzParseSnapshot(f *testing.F) {
	const full = `"snapshotVersion":1,"server":{"name":"a","version":"1"},"protocolVersion":"p","instructions":"obey","tools":[{"name":"t"}],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"`
	for _, seed := range []string{
		`{"kind":"mcpsign.snapshot",` + full + `}`,
		`{"tools":[{"name":"a"}]}`,
		`{"prompts":[]}`,
		`{"Kind":"mcpsign.snapshot",` + full + `}`,
		`{` + full + `}`,
		`{"tools":[{"name":"a"}],"Tools":[{"name":"evil"}]}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
		`{"tools":[],"nextCursor":"x"}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"Instructions":"x"}`,
		"{\"\u212aind\":\"mcpsign.snapshot\"," + full + "}",
		`{"kind":"mcpsign.snapshot",` + full + `,"clientCapabilities":{"roots":{"listChanged":true}}}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"clientCapabilities":{}}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"clientCapabilities":null}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"clientCapabilities":{"a":1,"a":2}}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"ClientCapabilities":{}}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"resources":[{"uri":"file:///a","name":"a","description":"A.\u200b"}]}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"resources":[]}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"resources":null}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"resources":[],"Resources":[{"uri":"x"}]}`,
		`{"kind":"mcpsign.snapshot",` + full + `,"resources":[{"uri":"a"},{"uri":"a"}]}`,
		`{"resources":[{"uri":"a"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseSnapshot(in)
		if err != nil {
			return
		}
		var lenient struct {
			Server            *ServerInfo
			Instructions      *string
			Tools             []json.RawMessage
			Prompts           []json.RawMessage
			ResourceTemplates []json.RawMessage
			Resources         []json.RawMessage
		}
		if json.Unmarshal(in, &lenient) == nil {
			if len(lenient.Resources) != len(s.Resources) {
				t.Fatalf("resources: lenient reads %d, strict %d", len(lenient.Resources), len(s.Resources))
			}
			if (lenient.Instructions == nil) != (s.Instructions == nil) || (s.Instructions != nil && *lenient.Instructions != *s.Instructions) {
				t.Fatalf("instructions: lenient %v, strict %v", lenient.Instructions, s.Instructions)
			}
			if lenient.Server != nil && *lenient.Server != s.Server {
				t.Fatalf("server: lenient %+v, strict %+v", *lenient.Server, s.Server)
			}
			for _, k := range Kinds {
				var l []json.RawMessage
				switch k {
				case KindTool:
					l = lenient.Tools
				case KindPrompt:
					l = lenient.Prompts
				default:
					l = lenient.ResourceTemplates
				}
				if len(l) != len(s.Definitions(k)) {
					t.Fatalf("%s: lenient reads %d, strict %d", k, len(l), len(s.Definitions(k)))
				}
			}
		}
		file, err := s.MarshalFile()
		if err != nil {
			return
		}
		s2, err := ParseSnapshot(file)
		if err != nil {
			t.Fatalf("written snapshot does not read back: %v\n%s", err, file)
		}
		r1, r2 := Compute(s), Compute(s2)
		for _, k := range Kinds {
			if r1.Sets[k] != r2.Sets[k] {
				t.Fatalf("%s set digest changed after write and read", k)
			}
		}
		if (s.Resources == nil) != (s2.Resources == nil) {
			t.Fatalf("resources listed %v, after write and read %v", s.Resources != nil, s2.Resources != nil)
		}
		if rr1, rr2 := ComputeResources(s), ComputeResources(s2); rr1 != nil && rr1.Sets[KindResource] != rr2.Sets[KindResource] {
			t.Fatalf("resource set digest changed after write and read")
		}
		if !bytes.Equal(s.ClientCapabilities, s2.ClientCapabilities) {
			t.Fatalf("clientCapabilities changed after write and read: %q, then %q", s.ClientCapabilities, s2.ClientCapabilities)
		}
		if s.ClientCapabilities != nil && (len(s.ClientCapabilities) == 0 || s.ClientCapabilities[0] != '{') {
			t.Fatalf("clientCapabilities accepted that are not an object: %q", s.ClientCapabilities)
		}
	})
}
