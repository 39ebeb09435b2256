package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// TestReleasedFromRegistry: a file of server.json documents whose pointers
// name bundles on a loopback TLS server; the watched names' bundles are
// fetched, digest-checked and added, the others never fetched.
func TestReleasedFromRegistry(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	bundle := dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR))
	want, _ := NewReleased(w.check(t))
	if err := want.AddBundle(context.Background(), bundle); err != nil || want.Len() == 0 {
		t.Fatalf("reference: %d %v", want.Len(), err)
	}
	notBundle := []byte(`{"not":"a bundle"}`)
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/b.sigstore.json":
			w.Write(bundle)
		case "/not-a-bundle":
			w.Write(notBundle)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	good, gd := srv.URL+"/b.sigstore.json", registry.PointerDigest(bundle)
	entry := func(name, url, dg string) string {
		return `{"name":"` + name + `","version":"1.0.0","description":"d","_meta":{"` + registry.PublisherProvided + `":{"` +
			registry.AttestationMember + `":{"bundleUrl":"` + url + `","bundleDigest":"` + dg + `"}}}}`
	}
	other := entry("io.github.other/x", srv.URL+"/missing", gd) // never fetched: not watched
	for _, c := range []struct {
		name     string
		entries  []string
		names    []string
		added    int
		requests int32
		err      error
		msg      []string // in the error
	}{
		{"exact name", []string{entry("io.github.acme/notes", good, gd), other}, []string{"io.github.acme/notes"}, 1, 1, nil, nil},
		{"namespace pattern", []string{other, entry("io.github.acme/notes", good, gd), entry("io.github.acme/todo", good, gd)}, []string{"io.github.acme/*"}, 2, 2, nil, nil},
		{"no name matches", []string{other, entry("io.github.acme/notes", good, gd)}, []string{"io.github.acme/todo"}, 0, 0, nil, nil},
		{"no attestation", []string{`{"name":"io.github.acme/notes","version":"1","description":"d"}`}, []string{"io.github.acme/*"}, 0, 0, nil, nil},
		{"digest mismatch", []string{entry("io.github.acme/notes", good, registry.PointerDigest(notBundle))}, []string{"io.github.acme/notes"}, 0, 1,
			source.ErrBundleDigest, []string{`"io.github.acme/notes"`, good}},
		{"not found", []string{entry("io.github.acme/notes", srv.URL+"/gone", gd)}, []string{"io.github.acme/notes"}, 0, 1,
			source.ErrBundleFetch, []string{`"io.github.acme/notes"`, srv.URL + "/gone"}},
		{"not a bundle", []string{entry("io.github.acme/notes", srv.URL+"/not-a-bundle", registry.PointerDigest(notBundle))}, []string{"io.github.acme/notes"}, 0, 1,
			ErrNotBundle, []string{`"io.github.acme/notes"`, srv.URL + "/not-a-bundle"}},
		{"http pointer", []string{entry("io.github.acme/notes", strings.Replace(good, "https:", "http:", 1), gd)}, []string{"io.github.acme/notes"}, 0, 0,
			registry.ErrAttestation, []string{`"io.github.acme/notes"`}},
		{"no names", []string{other}, nil, 0, 0, ErrRegistrySource, nil},
		{"bad name", []string{other}, []string{"acme"}, 0, 0, ErrRegistrySource, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Not parallel: the subtests share the request counter.
			src := filepath.Join(t.TempDir(), "servers.jsonl")
			if err := os.WriteFile(src, []byte(strings.Join(c.entries, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			requests.Store(0)
			r, _ := NewReleased(w.check(t))
			// The bundles are on 127.0.0.1, which a file source's fetches
			// refuse unless allowed.
			n, err := ReleasedFromRegistry(context.Background(), r, src, c.names, RegistryOptions{HTTPClient: srv.Client(), BundleAddresses: source.LoopbackAddresses})
			failing := c.err != nil || c.msg != nil
			if (err != nil) != failing || (c.err != nil && !errors.Is(err, c.err)) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %s", err, m)
				}
			}
			if n != c.added || requests.Load() != c.requests {
				t.Fatalf("%d bundles added, %d requests; want %d, %d", n, requests.Load(), c.added, c.requests)
			}
			if c.added > 0 && r.Len() != want.Len() {
				t.Fatalf("%d digests, want %d", r.Len(), want.Len())
			}
			for d := range want.digests {
				if (c.added > 0) != r.releasedIn(d, []string{hexID(w.a)}) {
					t.Errorf("%s: contained %v", d, r.releasedIn(d, []string{hexID(w.a)}))
				}
			}
		})
	}
	// A watched entry's version and bundle URL, which the registry chose,
	// are named raw in the error and escaped once where it is printed.
	hv := "1\u202e0\u200b\x1b[31m\\ \"q\"\nmcpsign: verified"
	hvJSON, _ := json.Marshal(hv)
	src := filepath.Join(t.TempDir(), "hostile.jsonl")
	line := `{"name":"io.github.acme/notes","version":` + string(hvJSON) + `,"description":"d","_meta":{"` + registry.PublisherProvided + `":{"` +
		registry.AttestationMember + `":{"bundleUrl":"` + srv.URL + `/gone","bundleDigest":"` + gd + `"}}}}`
	if err := os.WriteFile(src, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := NewReleased(w.check(t))
	_, err := ReleasedFromRegistry(context.Background(), r, src, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client(), BundleAddresses: source.LoopbackAddresses})
	if err == nil || !strings.Contains(err.Error(), `registry entry "io.github.acme/notes" version `+textsafe.RawQuote(hv)+`, bundle "`+srv.URL+`/gone"`) {
		t.Errorf("hostile version: %q, want it named raw", err)
	} else if shown := textsafe.ShowError(err); !strings.Contains(shown, `version "`+textsafe.Escape(hv)+`"`) || strings.Contains(shown, `\\u{`) || strings.Contains(shown, "\n") {
		t.Errorf("hostile version shown as %s, want it escaped once", shown)
	}
	if _, err := ReleasedFromRegistry(context.Background(), want, "-", []string{"a/b"}, RegistryOptions{}); !errors.Is(err, ErrRegistrySource) {
		t.Errorf("standard input: %v", err)
	}
	// By default a file's entries may not point at bundles on loopback:
	// refused before any request.
	src = filepath.Join(t.TempDir(), "servers.jsonl")
	os.WriteFile(src, []byte(entry("io.github.acme/notes", good, gd)+"\n"), 0o644)
	requests.Store(0)
	if _, err := ReleasedFromRegistry(context.Background(), want, src, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client()}); !errors.Is(err, source.ErrAddressRefused) || requests.Load() != 0 {
		t.Errorf("a bundle on loopback, by default: %v, %d requests", err, requests.Load())
	}
}

// TestRegistryRefresh: no registry, no BeforeRun; each registry is read at
// every call, and the first that fails fails the call.
func TestRegistryRefresh(t *testing.T) {
	t.Parallel()
	r, _ := NewReleased(ReleaseCheck{})
	if RegistryRefresh(r, nil, []string{"a/b"}, RegistryOptions{}) != nil {
		t.Fatal("a BeforeRun without registries")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, []byte(`{"name":"io.github.acme/notes","version":"1","description":"d"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := RegistryRefresh(r, []string{empty, empty}, []string{"io.github.acme/*"}, RegistryOptions{})
	if err := ok(context.Background()); err != nil {
		t.Fatalf("registries listing no attestation: %v", err)
	}
	bad := RegistryRefresh(r, []string{empty, "-"}, []string{"io.github.acme/*"}, RegistryOptions{})
	if err := bad(context.Background()); !errors.Is(err, ErrRegistrySource) {
		t.Fatalf("standard input as the second registry: %v", err)
	}
}
