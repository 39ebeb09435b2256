package digest

import (
	"encoding/json"
	"errors"
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

// TestSummary: the counts with the static resources when they are listed,
// and the definitions without a digest before the resources without one.
func TestSummary(t *testing.T) {
	tool := json.RawMessage(`{"name":"a"}`)
	bad := json.RawMessage(`{"name":1}`)
	res, res2 := json.RawMessage(`{"uri":"file:///a"}`), json.RawMessage(`{"uri":"file:///b"}`)
	badRes := json.RawMessage(`{"uri":2}`)
	for _, tc := range []struct {
		name    string
		s       *Snapshot
		want    string
		wantErr string // a definition key or URI the error names; "" for none
	}{
		{"no resources", &Snapshot{Tools: []json.RawMessage{tool}}, "1 tool, 0 prompts, 0 resource templates", ""},
		{"resources", &Snapshot{Tools: []json.RawMessage{tool}, Resources: []json.RawMessage{res, res2}}, "1 tool, 0 prompts, 0 resource templates, 2 resources", ""},
		{"bad resource", &Snapshot{Resources: []json.RawMessage{badRes}}, "0 tools, 0 prompts, 0 resource templates, 1 resource", "resource"},
		{"bad tool first", &Snapshot{Tools: []json.RawMessage{bad}, Resources: []json.RawMessage{badRes}}, "1 tool, 0 prompts, 0 resource templates, 1 resource", "tool"},
	} {
		got, err := Summary(tc.s)
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		var ie *InvalidDefinitionsError
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (!errors.As(err, &ie) || len(ie.Errors) != 1 || string(ie.Errors[0].Kind) != tc.wantErr):
			t.Errorf("%s: error %v, want one %s without a digest", tc.name, err, tc.wantErr)
		}
	}
}
