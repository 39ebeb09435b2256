package trustroot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDescribeFile: the document of 'trustroot show --format json' (its
// members beside the description's) and the text's first line, the file
// name escaped.
func TestDescribeFile(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := DescribeFile("a\x1b.json", []byte("abc"), productionRoot(t), now)
	const sum = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"reportVersion": "1", "file": `"a\u001b.json"`, "sha256": `"` + sum + `"`} {
		if string(doc[k]) != want {
			t.Errorf("%s: %s, want %s", k, doc[k], want)
		}
	}
	if _, ok := doc["certificateAuthorities"]; !ok {
		t.Errorf("no description in %s", b)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if first, _, _ := strings.Cut(text.String(), "\n"); first != `a\u{1B}.json  sha256:`+sum {
		t.Errorf("first line %q", first)
	}
}
