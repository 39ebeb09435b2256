package digest

import (
	"bytes"
	"encoding/json"
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

func TestParseSnapshotErrors(t *testing.T) {
	tests := []struct{ name, in, err string }{
		{"wrong kind", `{"kind":"other","snapshotVersion":1}`, `"kind"`},
		{"future version", `{"kind":"mcpsign.snapshot","snapshotVersion":2}`, "not supported"},
		{"unknown member", `{"kind":"mcpsign.snapshot","snapshotVersion":1,"extra":1}`, "not a member"},
		{"missing tools", `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"a","version":"b"},"protocolVersion":"x","prompts":[],"resourceTemplates":[]}`, `"tools" is missing`},
		{"bad instructions", "{\"kind\":\"mcpsign.snapshot\",\"snapshotVersion\":1,\"instructions\":\"\xff\"}", "invalid UTF-8"},
		{"paged bare list", `{"tools":[],"nextCursor":"x"}`, "one page"},
		{"neither", `{"foo":[]}`, "not a snapshot"},
		{"repeated", `{"tools":[],"tools":[]}`, "repeated"},
		{"array", `[]`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSnapshot([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
	s, err := ParseSnapshot([]byte(`{"prompts":[{"name":"p"}],"_meta":{}}`))
	if err != nil || len(s.Prompts) != 1 || s.Tools == nil {
		t.Fatalf("bare list: %v %+v", err, s)
	}
}
