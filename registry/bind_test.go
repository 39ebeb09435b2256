package registry

import (
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
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

// TestCheckBindingText: a refusal says what the entry needs and what the
// statement binds.
func TestCheckBindingText(t *testing.T) {
	t.Parallel()
	h, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	for _, tt := range []struct {
		name string
		pkg  Package
		st   []attest.Package
		want string
	}{
		{"purl, no package", Package{RegistryType: "npm", Identifier: "n", Version: "1.0.0"}, nil,
			`("npm" "n") needs purl "pkg:npm/n@1.0.0"; the statement binds no package`},
		{"purl with sha256", Package{RegistryType: "npm", Identifier: "n", Version: "1.0.0", FileSHA256: h},
			[]attest.Package{{PURL: "pkg:npm/n@1.0.0", Digest: map[string]string{"sha256": other}}},
			`needs purl "pkg:npm/n@1.0.0" with sha256:` + h + `; the statement binds "pkg:npm/n@1.0.0" sha256:` + other},
		{"sha256", Package{RegistryType: "mcpb", Identifier: "https://x/n.mcpb", FileSHA256: h},
			[]attest.Package{{PURL: "pkg:generic/n@1.0.0"}, {PURL: "pkg:generic/m@1.0.0", Digest: map[string]string{"sha256": other}}},
			`needs sha256:` + h + `; the statement binds "pkg:generic/n@1.0.0", "pkg:generic/m@1.0.0" sha256:` + other},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &attest.Statement{}
			st.Predicate.Server.Version = "1.0.0"
			st.Predicate.Package = tt.st
			err := CheckBinding(&Entry{Name: "a/b", Version: "1.0.0", Packages: []Package{tt.pkg}}, st)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
}
