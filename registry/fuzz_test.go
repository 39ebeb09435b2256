package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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

// FuzzLoadServed: never panics; a set that loads serves only entries with
// a verified block, and every list page is JSON.
func FuzzLoadServed(f *testing.F) {
	addSeeds(f)
	f.Add(servedDump(f, serveSpecs))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := LoadServed(context.Background(), bytes.NewReader(data), Limits{MaxEntries: 100})
		if err != nil {
			if !errors.Is(err, ErrNotServable) {
				t.Fatalf("not a typed refusal: %v", err)
			}
			return
		}
		for _, e := range set.all {
			if !json.Valid(e.resp) || !bytes.Contains(e.resp, []byte(`"`+VerifiedMember+`":{`)) {
				t.Fatalf("served %s", e.resp)
			}
		}
	})
}

// FuzzServeQuery: any query is answered 200 or 400 with JSON, never 5xx.
func FuzzServeQuery(f *testing.F) {
	h := NewServer(loadSet(f, servedDump(f, serveSpecs)))
	for _, q := range []string{"limit=2", "cursor=!!", "search=acme&version=latest", "updated_since=2026-01-01T00:00:00Z", "limit=1&cursor=" + cursorOf(h.Set().all[0])} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		req := httptest.NewRequest(http.MethodGet, "/v0.1/servers", nil)
		req.URL.RawQuery = q
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if (rec.Code != 200 && rec.Code != 400) || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q: %d %s", q, rec.Code, rec.Body.Bytes())
		}
	})
}
