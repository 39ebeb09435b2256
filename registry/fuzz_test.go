package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
