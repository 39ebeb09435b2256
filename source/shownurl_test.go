package source

import "testing"

func TestSpecShownURL(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{URL: "https://user:secret@mcp.example.com/mcp?api_key=k#frag"}, "https://mcp.example.com/mcp"},
		{Spec{URL: "https://mcp.example.com/mcp"}, "https://mcp.example.com/mcp"},
		{Spec{URL: "https://[::1"}, "(URL)"},
		{Spec{File: "tools.json"}, ""},
	}
	for _, tt := range tests {
		if got := tt.spec.ShownURL(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.spec, got, tt.want)
		}
	}
}
