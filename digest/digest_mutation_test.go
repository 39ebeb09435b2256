package digest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestComputeOrderAndKeys: definitions are ordered by key, then index
// (repeated keys in listing order, all withheld); a definition the strict
// reader refuses is still named by its best-effort key, and one whose key
// is not a string is not.
func TestComputeOrderAndKeys(t *testing.T) {
	t.Parallel()
	s := &Snapshot{Server: ServerInfo{Name: "n", Version: "1"}, Tools: []json.RawMessage{
		json.RawMessage(`{"name":"b","inputSchema":{}}`),
		json.RawMessage(`{"name":"a","inputSchema":{},"x":1}`),
		json.RawMessage(`{"name":"a","inputSchema":{}}`),
		json.RawMessage(`{"name":"c","x":1,"x":2}`),
		json.RawMessage(`{"name":7,"x":1,"x":2}`),
	}}
	r := Compute(s)
	var got []string
	for _, d := range r.Definitions {
		got = append(got, d.Key+"#"+string(rune('0'+d.Index)))
	}
	if want := "#4 a#1 a#2 b#0 c#3"; strings.Join(got, " ") != want {
		t.Fatalf("definitions %q, want %q", strings.Join(got, " "), want)
	}
	for _, d := range r.Definitions {
		if (d.Err != nil) == (d.Key == "b") {
			t.Errorf("%s#%d: %v", d.Key, d.Index, d.Err)
		}
	}
}

// TestSmallReaders: the strict readers refuse empty input without a
// panic; CaseVariant matches a name of the same length in another case.
func TestSmallReaders(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", " ", "\n"} {
		if _, err := DecodeString([]byte(in)); err == nil {
			t.Errorf("DecodeString(%q): accepted", in)
		}
		if _, _, err := Members([]byte(in)); err == nil {
			t.Errorf("Members(%q): accepted", in)
		}
		if _, err := CanonicalClientCapabilities([]byte(in)); err == nil || !strings.Contains(err.Error(), "not nothing") {
			t.Errorf("CanonicalClientCapabilities(%q) = %v, want \"not nothing\"", in, err)
		}
	}
	for _, tc := range []struct {
		name, known string
		want        bool
	}{
		{"Name", "name", true}, {"name", "name", false}, {"NAMEX", "name", false}, {"nam", "name", false},
		{"\u212a", "k", true}, // the Kelvin sign: three bytes folding to one
	} {
		if got := CaseVariant(tc.name, tc.known); got != tc.want {
			t.Errorf("CaseVariant(%q, %q) = %v", tc.name, tc.known, got)
		}
	}
	v40 := strings.Repeat("a", 40)
	if got := shortValue([]byte(v40)); got != `"`+v40+`"` {
		t.Errorf("shortValue of 40 bytes: %s", got)
	}
	if got := shortValue([]byte(v40 + "b")); got != `"`+v40+`"…` {
		t.Errorf("shortValue of 41 bytes: %s", got)
	}
}

// TestMarshalFileEmptyList: an empty listing is written "[]", a listing
// with definitions one per line.
func TestMarshalFileEmptyList(t *testing.T) {
	t.Parallel()
	s := &Snapshot{Server: ServerInfo{Name: "n", Version: "1"}, ProtocolVersion: "2025-06-18",
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{}}`)}}
	data, err := s.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\"prompts\": []", "\"tools\": [\n    {\"name\":\"t\",\"inputSchema\":{}}\n  ]"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s\nlacks %q", data, want)
		}
	}
}
