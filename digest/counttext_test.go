package digest

import (
	"encoding/json"
	"testing"
)

// TestCountText: the one "N tools, N prompts, N resource templates"
// formatter, singular where N is 1, from a snapshot and from a Result.
func TestCountText(t *testing.T) {
	defs := func(n int, key string) []json.RawMessage {
		out := make([]json.RawMessage, n)
		for i := range out {
			out[i] = json.RawMessage(`{"` + key + `":"d` + string(rune('a'+i)) + `"}`)
		}
		return out
	}
	tests := []struct {
		tools, prompts, templates int
		want                      string
	}{
		{0, 0, 0, "0 tools, 0 prompts, 0 resource templates"},
		{1, 1, 1, "1 tool, 1 prompt, 1 resource template"},
		{2, 1, 3, "2 tools, 1 prompt, 3 resource templates"},
	}
	for _, tc := range tests {
		s := &Snapshot{Tools: defs(tc.tools, "name"), Prompts: defs(tc.prompts, "name"), ResourceTemplates: defs(tc.templates, "uriTemplate")}
		if got := s.CountText(); got != tc.want {
			t.Errorf("Snapshot.CountText = %q, want %q", got, tc.want)
		}
		if got := Compute(s).CountText(); got != tc.want {
			t.Errorf("Result.CountText = %q, want %q", got, tc.want)
		}
	}
}
