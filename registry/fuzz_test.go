package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

func jsonMembers(raw []byte) ([]string, map[string][]byte, error) {
	return digestMembers(bytes.TrimSpace(raw))
}

func addSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "seeds", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseEntry: never panics; an entry that reads has a name and a
// version, and its pointers are https with a well-formed digest.
func FuzzParseEntry(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEntry(data, Limits{})
		if err != nil {
			return
		}
		if e.Name == "" || e.Version == "" {
			t.Fatalf("entry without name or version: %+v", e)
		}
		// Only what the strict reader reads reaches a dump.
		if _, err := digest.Canonicalize(bytes.TrimSpace(data)); err != nil {
			t.Fatalf("an entry the strict reader refuses was read: %v", err)
		}
		for _, p := range e.Pointers {
			if len(p.Digest) != 71 || len(p.URL) < 9 || p.URL[:8] != "https://" {
				t.Fatalf("pointer %+v", p)
			}
		}
	})
}

// FuzzParsePage: never panics, and never returns more entries than the
// bound.
func FuzzParsePage(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		items, _, err := ParsePage(data, Limits{MaxPageEntries: 10})
		if err == nil && len(items) > 10 {
			t.Fatalf("%d entries", len(items))
		}
	})
}

// FuzzReadDump: never panics, never hands out a value over the bound.
func FuzzReadDump(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ReadDump(bytes.NewReader(data), Limits{MaxPageBytes: 4096, MaxEntryBytes: 2048}, func(raw []byte) error {
			if len(raw) > 4096 {
				t.Fatalf("a value of %d bytes", len(raw))
			}
			return nil
		})
	})
}

// FuzzHint: whatever server.json Hint accepts, the result reads with the
// one pointer written, and every top-level member but _meta keeps its
// bytes.
func FuzzHint(f *testing.F) {
	addSeeds(f)
	f.Add([]byte("{\n  \"name\": \"a/b\",\n  \"version\": \"1\",\n  \"_meta\": {\"x\": 1}\n}\n"))
	p := Pointer{URL: "https://example.com/b.json", Digest: "sha256:" + strings.Repeat("ab", 32)}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Hint(data, []Pointer{p})
		if err != nil {
			return
		}
		e, err := ParseServer(out, Limits{})
		if err != nil || len(e.Pointers) != 1 || e.Pointers[0] != p {
			t.Fatalf("%q: %+v %v", out, e, err)
		}
		_, before, err1 := jsonMembers(data)
		_, after, err2 := jsonMembers(out)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v %v", err1, err2)
		}
		for k, v := range before {
			if k != "_meta" && !bytes.Equal(after[k], v) {
				t.Fatalf("member %q changed: %q -> %q", k, v, after[k])
			}
		}
	})
}
