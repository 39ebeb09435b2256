package registry

import (
	"strings"
	"testing"
)

// TestIsHex64: a SHA-256 is 64 lowercase hex digits, every one checked,
// each range to its ends.
func TestIsHex64(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, s string
		want    bool
	}{
		{"every digit", strings.Repeat("0123456789abcdef", 4), true},
		{"zeros", strings.Repeat("0", 64), true},
		{"nines", strings.Repeat("9", 64), true},
		{"a", strings.Repeat("a", 64), true},
		{"f", strings.Repeat("f", 64), true},
		{"63 digits", strings.Repeat("0", 63), false},
		{"65 digits", strings.Repeat("0", 65), false},
		{"g last", strings.Repeat("0", 63) + "g", false},
		{"uppercase first", "A" + strings.Repeat("0", 63), false},
		{"slash (before 0)", strings.Repeat("0", 63) + "/", false},
		{"colon (after 9)", strings.Repeat("0", 63) + ":", false},
		{"backquote (before a)", strings.Repeat("0", 63) + "`", false},
	} {
		if got := isHex64(tt.s); got != tt.want {
			t.Errorf("%s: isHex64(%q) = %v, want %v", tt.name, tt.s, got, tt.want)
		}
	}
}
