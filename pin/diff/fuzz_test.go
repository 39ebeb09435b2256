package diff

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// FuzzGainedHidden: the hidden-character reader never panics, finds nothing
// in a definition compared with itself, and finds exactly the hidden
// characters of a definition new against none.
func FuzzGainedHidden(f *testing.F) {
	f.Add([]byte(`{"name":"t","description":"a\u200b<IMPORTANT>\u202e"}`), []byte(`{"name":"t","description":"a"}`))
	f.Add([]byte(`{"name":"t","inputSchema":{"properties":{"q\u2066":{"description":"\udb40\udc41"}}}}`), []byte(`{}`))
	f.Add([]byte(`{"_meta":{"x":"\u200b"}}`), []byte(`[1,"\u200b"]`))
	f.Add([]byte(`"\ufeff"`), []byte(`{"a":`))
	f.Fuzz(func(t *testing.T, cur, old []byte) {
		if g := gainedHidden(cur, cur); len(g) != 0 {
			t.Fatalf("%q gained %v against itself", cur, g)
		}
		g := gainedHidden(old, cur)
		for _, h := range g {
			if len(h.chars) == 0 {
				t.Fatalf("an empty gain for %q", h.field)
			}
		}
		if json.Valid(cur) && !bytes.ContainsAny(cur, `\`) {
			n := 0
			for _, r := range string(cur) {
				if textsafe.Hidden(r) {
					n++
				}
			}
			if n == 0 && len(gainedHidden(nil, cur)) != 0 {
				t.Fatalf("hidden characters found in %q, which has none", cur)
			}
		}
	})
}
