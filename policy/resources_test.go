package policy

import (
	"strings"
	"testing"
)

// TestResources reads the member resources in defaults and servers, and
// resolves it: a server's replaces the defaults', and neither gives "" (the
// lock decides).
func TestResources(t *testing.T) {
	const unsigned = `"unsigned":"tofu"`
	for _, tc := range []struct {
		name, defaults, server string
		want                   Resources
		err                    string
	}{
		{name: "not given", want: ""},
		{name: "defaults", defaults: `"resources":"pin"`, want: ResourcesPin},
		{name: "server over defaults", defaults: `"resources":"pin"`, server: `"resources":"pass"`, want: ResourcesPass},
		{name: "server only", server: `"resources":"hide"`, want: ResourcesHide},
		{name: "unknown word", server: `"resources":"block"`, err: `/servers/a/resources: "block": want one of pass, pin, hide`},
		{name: "case", defaults: `"resources":"Pin"`, err: `/defaults/resources: "Pin"`},
		{name: "not a string", server: `"resources":true`, err: `/servers/a/resources`},
		{name: "case variant member", server: `"Resources":"pass"`, err: `"resources"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, s := unsigned, unsigned
			if tc.defaults != "" {
				d += "," + tc.defaults
			}
			if tc.server != "" {
				s += "," + tc.server
			}
			f, err := parse(t, `{`+base+`,"defaults":{`+d+`},"servers":{"a":{`+s+`}}}`)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse: %v, want an error naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.Resolve("a", ResolveOptions{StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if r.Resources != tc.want {
				t.Errorf("resources %q, want %q", r.Resources, tc.want)
			}
		})
	}
}
