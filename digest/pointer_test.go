package digest

import "testing"

// TestPointerToken: the one JSON Pointer escaping (RFC 6901 section 3) that
// policy, registry, mcpwire and the canonicalizer's errors use: "~" before
// "/", so an escaped-looking name stays what it was.
func TestPointerToken(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", ""},
		{"tools", "tools"},
		{"a/b", "a~1b"},
		{"a~b", "a~0b"},
		{"~1", "~01"},
		{"/~", "~1~0"},
		{"io.modelcontextprotocol/client-capabilities", "io.modelcontextprotocol~1client-capabilities"},
		{"~/~/", "~0~1~0~1"},
	} {
		if got := PointerToken(tc.name); got != tc.want {
			t.Errorf("PointerToken(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
