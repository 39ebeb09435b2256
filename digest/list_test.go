package digest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSplitList(t *testing.T) {
	tests := []struct {
		name    string
		kind    Kind
		in      string
		items   int
		cursor  string
		hasNext bool
		err     string
	}{
		{"one page", KindTool, `{"tools":[{"name":"a"},{"name":"b"}]}`, 2, "", false, ""},
		{"with cursor", KindPrompt, `{"prompts":[],"nextCursor":"c1","_meta":{}}`, 0, "c1", true, ""},
		{"ttl members", KindTool, `{"tools":[],"ttlMs":1000,"cacheScope":"session"}`, 0, "", false, ""},
		{"templates", KindResourceTemplate, `{"resourceTemplates":[{"uriTemplate":"x://{a}"}]}`, 1, "", false, ""},
		{"bad definition kept", KindTool, "{\"tools\":[{\"name\":\"a\",\"d\":\"\xff\",\"d\":1}]}", 1, "", false, ""},
		{"non-string cursor", KindTool, `{"tools":[],"nextCursor":5}`, 0, "", false, "nextCursor is not a string"},
		{"null cursor", KindTool, `{"tools":[],"nextCursor":null}`, 0, "", false, "nextCursor is not a string"},
		{"repeated tools", KindTool, `{"tools":[{"name":"a"}],"tools":[{"name":"evil"}]}`, 0, "", false, `repeated member "tools"`},
		{"missing array", KindTool, `{"prompts":[]}`, 0, "", false, `no "tools" member`},
		{"not array", KindTool, `{"tools":{}}`, 0, "", false, "not a JSON array"},
		{"garbage", KindTool, `{"tools":[}`, 0, "", false, "invalid JSON"},
		{"trailing", KindTool, `{"tools":[]} x`, 0, "", false, "after the JSON object"},
		{"case variant list", KindTool, `{"tools":[],"Tools":[{"name":"evil"}]}`, 0, "", false, `member "Tools" would be read as "tools"`},
		{"case variant alone", KindTool, `{"TOOLS":[{"name":"evil"}]}`, 0, "", false, `member "TOOLS" would be read as "tools"`},
		{"long s variant", KindTool, "{\"tools\":[],\"tool\u017f\":[]}", 0, "", false, "would be read as \"tools\""},
		{"kelvin variant", KindTool, "{\"tools\":[],\"nextCursor\":\"a\",\"NEXTCURSOR\":\"b\"}", 0, "", false, "would be read as \"nextCursor\""},
		{"another kind in another case", KindTool, `{"tools":[],"Prompts":[]}`, 0, "", false, `member "Prompts" would be read as "prompts"`},
		{"another kind exactly", KindTool, `{"tools":[],"prompts":[]}`, 0, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, cursor, hasNext, err := SplitList(tt.kind, []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tt.items || cursor != tt.cursor || hasNext != tt.hasNext {
				t.Errorf("got %d items, cursor %q %v", len(items), cursor, hasNext)
			}
		})
	}
	// Items are the exact bytes received.
	in := `{"tools":[ {"name" : "a",  "x":[1, 2]} ]}`
	items, _, _, _ := SplitList(KindTool, []byte(in))
	if string(items[0]) != `{"name" : "a",  "x":[1, 2]}` {
		t.Errorf("item bytes changed: %q", items[0])
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	ins := "Line one\nline \u2028 two \"quoted\""
	s := &Snapshot{
		Server:          ServerInfo{Name: "srv", Version: "1.2.3"},
		ProtocolVersion: "2025-11-25",
		Instructions:    &ins,
		Tools: []json.RawMessage{
			json.RawMessage("{\n  \"name\": \"a\",\n  \"execution\": {\"taskSupport\": \"optional\"}\n}"),
			json.RawMessage(`{"name":"b","_meta":{"z":1}}`),
		},
		Prompts:           []json.RawMessage{},
		ResourceTemplates: []json.RawMessage{json.RawMessage(`{"uriTemplate":"n://{id}","name":"n"}`)},
		CapturedAt:        time.Date(2026, 11, 29, 12, 0, 0, 123, time.UTC),
	}
	file, err := s.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSnapshot(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, file)
	}
	if *got.Instructions != ins || got.Server != s.Server || got.ProtocolVersion != s.ProtocolVersion || !got.CapturedAt.Equal(s.CapturedAt) {
		t.Errorf("envelope changed: %+v", got)
	}
	for _, k := range Kinds {
		a, b := s.Definitions(k), got.Definitions(k)
		if len(a) != len(b) {
			t.Fatalf("%s: %d definitions, want %d", k, len(b), len(a))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Errorf("%s #%d bytes changed:\n%q\n%q", k, i, a[i], b[i])
			}
		}
	}
	r1, r2 := Compute(s), Compute(got)
	for _, k := range Kinds {
		if r1.Sets[k] != r2.Sets[k] {
			t.Errorf("%s set digest differs after round trip", k)
		}
	}
	if r1.Instructions != r2.Instructions {
		t.Error("instructions digest differs after round trip")
	}
	again, _ := got.MarshalFile()
	if !bytes.Equal(again, file) {
		t.Error("snapshot file is not stable under read and write")
	}
}

func TestParseSnapshotStrict(t *testing.T) {
	const full = `"snapshotVersion":1,"server":{"name":"a","version":"1"},"protocolVersion":"p","instructions":"obey","tools":[{"name":"t"}],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"`
	tests := []struct {
		name, in string
		err      string // "" means accepted
		tools    int
		ins      bool // instructions read
	}{
		{"snapshot", `{"kind":"mcpsign.snapshot",` + full + `}`, "", 1, true},
		{"escaped kind name", `{"\u006bind":"mcpsign.snapshot",` + full + `}`, "", 1, true},
		{"bare tools", `{"tools":[{"name":"a"},{"name":"b"}]}`, "", 2, false},
		{"bare prompts", `{"prompts":[{"name":"p"}]}`, "", 0, false},
		{"bare templates", `{"resourceTemplates":[]}`, "", 0, false},

		// A lenient reader took these for bare lists and dropped the rest.
		{"Kind spelled", `{"Kind":"mcpsign.snapshot",` + full + `}`, `member "Kind": a file without "kind" must be a bare list result`, 0, false},
		{"kelvin kind", "{\"\u212aind\":\"mcpsign.snapshot\"," + full + "}", "member \"\u212aind\" (spelled with U+212A)", 0, false},
		{"no kind", `{` + full + `}`, `member "snapshotVersion": a file without "kind"`, 0, false},
		{"tools and Tools", `{"tools":[{"name":"a"}],"Tools":[{"name":"evil"}]}`, `member "Tools": a file without "kind"`, 0, false},
		{"Tools then tools", `{"Tools":[{"name":"evil"}],"tools":[{"name":"a"}]}`, `member "Tools": a file without "kind"`, 0, false},
		{"json-rpc result", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, `member "jsonrpc": a file without "kind"`, 0, false},
		{"bare result", `{"result":{"tools":[]}}`, `member "result"`, 0, false},
		{"bare with instructions", `{"tools":[],"instructions":"obey"}`, `member "instructions"`, 0, false},
		{"bare with _meta", `{"prompts":[{"name":"p"}],"_meta":{}}`, `member "_meta"`, 0, false},
		{"two kinds", `{"tools":[],"prompts":[]}`, `member "prompts"`, 0, false},
		{"paged bare list", `{"tools":[],"nextCursor":"x"}`, `member "nextCursor": a list result with a next page`, 0, false},
		{"null cursor", `{"tools":[],"nextCursor":null}`, `member "nextCursor"`, 0, false},
		{"bare not array", `{"tools":{}}`, "not a JSON array", 0, false},
		{"neither", `{}`, `no "kind" member`, 0, false},
		{"repeated", `{"tools":[],"tools":[]}`, `repeated member "tools"`, 0, false},
		{"array", `[]`, "not a JSON object", 0, false},

		// The snapshot file itself: exact spelling, every member known.
		{"wrong kind", `{"kind":"mcpsign.Snapshot",` + full + `}`, `member "kind": is "mcpsign.Snapshot", not "mcpsign.snapshot"`, 0, false},
		{"kind not string", `{"kind":1,` + full + `}`, `member "kind": not a JSON string`, 0, false},
		{"future version", `{"kind":"mcpsign.snapshot","snapshotVersion":2}`, `member "snapshotVersion": "2" is not supported`, 0, false},
		{"version spelled 1.0", `{"kind":"mcpsign.snapshot","snapshotVersion":1.0}`, `member "snapshotVersion": "1.0" is not supported`, 0, false},
		{"Tools in snapshot", `{"kind":"mcpsign.snapshot",` + full + `,"Tools":[]}`, `member "Tools": is not a member of a snapshot file`, 0, false},
		{"Instructions in snapshot", `{"kind":"mcpsign.snapshot",` + full + `,"Instructions":"x"}`, `member "Instructions": is not a member`, 0, false},
		{"unknown member", `{"kind":"mcpsign.snapshot",` + full + `,"extra":1}`, `member "extra": is not a member`, 0, false},
		{"server Name", `{"kind":"mcpsign.snapshot","server":{"name":"a","version":"1","Name":"b"}}`, `server member "Name": is not a member of server`, 0, false},
		{"server no version", `{"kind":"mcpsign.snapshot","server":{"name":"a"}}`, `server member "version" is missing`, 0, false},
		{"missing tools", `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"a","version":"b"},"protocolVersion":"x","prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"}`, `member "tools" is missing`, 0, false},
		{"missing capturedAt", `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"a","version":"b"},"protocolVersion":"x","tools":[],"prompts":[],"resourceTemplates":[]}`, `member "capturedAt" is missing`, 0, false},
		{"bad instructions", "{\"kind\":\"mcpsign.snapshot\",\"snapshotVersion\":1,\"instructions\":\"\xff\"}", "invalid UTF-8", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSnapshot([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrSnapshot) {
					t.Fatalf("error %v, want %q wrapping ErrSnapshot", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Tools) != tt.tools || (s.Instructions != nil) != tt.ins {
				t.Errorf("got %d tools, instructions %v", len(s.Tools), s.Instructions)
			}
			for _, k := range Kinds {
				if s.Definitions(k) == nil {
					t.Errorf("%s: nil definitions", k)
				}
			}
		})
	}
}

// TestSnapshotClientCapabilities: the optional clientCapabilities member is
// read strictly (an object only), kept in its RFC 8785 form, written back,
// and part of no digest.
func TestSnapshotClientCapabilities(t *testing.T) {
	const env = `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"s","version":"1"},"protocolVersion":"2025-11-25","tools":[{"name":"t"}],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"`
	base, err := ParseSnapshot([]byte(env + `}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		member  string
		want    string // canonical form; "" with wantErr
		wantErr string
	}{
		{"absent", ``, "", ""},
		{"roots", `,"clientCapabilities":{"roots":{"listChanged":true}}`, `{"roots":{"listChanged":true}}`, ""},
		{"empty", `,"clientCapabilities":{}`, `{}`, ""},
		{"canonicalized", `,"clientCapabilities":{ "sampling":{}, "roots" : {"listChanged":true}, "n":1.0E2 }`, `{"n":100,"roots":{"listChanged":true},"sampling":{}}`, ""},
		{"null", `,"clientCapabilities":null`, "", `member "clientCapabilities": invalid client capabilities: want a JSON object, not "null"`},
		{"array", `,"clientCapabilities":[]`, "", `invalid client capabilities: want a JSON object, not "[]"`},
		{"string", `,"clientCapabilities":"roots"`, "", `want a JSON object`},
		{"repeated member", `,"clientCapabilities":{"roots":{},"roots":{}}`, "", `repeated`},
		{"case variant", `,"ClientCapabilities":{}`, "", `member "ClientCapabilities": is not a member`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSnapshot([]byte(env + tt.member + `}`))
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrSnapshot containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(s.ClientCapabilities); got != tt.want {
				t.Fatalf("clientCapabilities = %q, want %q", got, tt.want)
			}
			if tt.want == "" && s.ClientCapabilities != nil {
				t.Fatalf("absent member read as %q", s.ClientCapabilities)
			}
			file, err := s.MarshalFile()
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && !bytes.Contains(file, []byte(`"clientCapabilities": `+tt.want)) {
				t.Fatalf("written file lacks the member:\n%s", file)
			}
			if tt.want == "" && bytes.Contains(file, []byte("clientCapabilities")) {
				t.Fatalf("written file has a member it should not:\n%s", file)
			}
			back, err := ParseSnapshot(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.ClientCapabilities, s.ClientCapabilities) {
				t.Fatalf("round trip: %q, want %q", back.ClientCapabilities, s.ClientCapabilities)
			}
			if r, b := Compute(s), Compute(base); r.Sets[KindTool] != b.Sets[KindTool] {
				t.Fatal("clientCapabilities changed the tools Set Digest")
			}
		})
	}
	if _, err := ParseSnapshot([]byte(`{"tools":[],"clientCapabilities":{}}`)); err == nil {
		t.Fatal("a bare list with clientCapabilities was accepted")
	}
}

func TestEqualClientCapabilities(t *testing.T) {
	tests := []struct {
		a, b string
		nilA bool
		want bool
	}{
		{a: `{"roots":{"listChanged":true}}`, b: `{ "roots" : { "listChanged" : true } }`, want: true},
		{a: `{"a":1,"b":2}`, b: `{"b":2,"a":1.0}`, want: true},
		{a: `{}`, b: `{"roots":{}}`, want: false},
		{a: `{"roots":{"listChanged":true}}`, b: `{"roots":{"listChanged":false}}`, want: false},
		{nilA: true, b: `{}`, want: false},
		{a: `[]`, b: `[]`, want: false},
	}
	for _, tt := range tests {
		var a []byte
		if !tt.nilA {
			a = []byte(tt.a)
		}
		if got := EqualClientCapabilities(a, []byte(tt.b)); got != tt.want {
			t.Errorf("EqualClientCapabilities(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
