package monitor

import "testing"

// TestSplitBundleEdges: an entry bundle splits at each length prefix, an
// empty entry last included; a bundle that ends inside a prefix or an
// entry is refused, saying how many bytes are left.
func TestSplitBundleEdges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   []byte
		want []string
		err  string
	}{
		{"empty", nil, []string{}, ""},
		{"one empty entry", []byte{0, 0}, []string{""}, ""},
		{"an empty entry last", []byte{0, 1, 'a', 0, 0}, []string{"a", ""}, ""},
		{"an entry to the end", []byte{0, 1, 'a', 0, 2, 'b', 'c'}, []string{"a", "bc"}, ""},
		{"one dangling byte", []byte{0, 1, 'a', 0}, nil, "1 dangling bytes at the end"},
		{"a short entry", []byte{0, 1, 'a', 0, 3, 'b', 'c'}, nil, "entry 1 says 3 bytes, 2 are left"},
		{"a short first entry", []byte{1, 0, 'a'}, nil, "entry 0 says 256 bytes, 1 are left"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := splitBundle(c.in, nil)
			if c.err != "" {
				if err == nil || err.Error() != c.err || got != nil {
					t.Fatalf("%q, error %v; want %s", got, err, c.err)
				}
				return
			}
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("%q, error %v; want %q", got, err, c.want)
			}
			for i := range got {
				if string(got[i]) != c.want[i] {
					t.Fatalf("%q, want %q", got, c.want)
				}
			}
		})
	}
}
