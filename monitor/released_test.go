package monitor

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// releaseWorld is a followed log A and another trusted log B, a watched
// release key and an unwatched one. A holds, after a filler entry: the
// release R, the poisoned entry P (both signed by the watched key), an
// entry U by the unwatched key, and X, signed by the watched key, whose
// artifact was also signed and logged in B alone (X2).
type releaseWorld struct {
	a, b                *fakeLog
	aURL                string
	key, other          *keyPair
	r, p, u, x, x2      *signed
	iR, iP, iU, iX, iX2 int64
	prev                *State
}

func newReleaseWorld(t testing.TB) *releaseWorld {
	t.Helper()
	w := &releaseWorld{a: newFakeLog(t, "a.log.monitor.example"), b: newFakeLog(t, "b.log.monitor.example"), key: newKeyPair(t), other: newKeyPair(t)}
	w.aURL = w.a.start(t)
	filler := w.other.signStatement(t, "filler")
	w.a.add(filler.body)
	w.prev = w.a.state(t, w.aURL)
	w.r, w.p, w.u = w.key.signStatement(t, "release"), w.key.signStatement(t, "poison"), w.other.signStatement(t, "other")
	w.x, w.x2 = w.key.signStatement(t, "twice"), w.key.signStatement(t, "twice")
	w.iR = w.a.add(w.r.body)
	w.iP = w.a.add(w.p.body)
	w.iU = w.a.add(w.u.body)
	w.iX = w.a.add(w.x.body)
	w.b.add(filler.body)
	w.iX2 = w.b.add(w.x2.body)
	return w
}

func (w *releaseWorld) check(t *testing.T) ReleaseCheck {
	return ReleaseCheck{TrustedMaterial: fakeRoot(t, w.a, w.b), KeyIDs: []string{w.key.id}}
}

// run checks A from the state before R with rel, and returns the log
// indexes of the unreleased-entry alerts and the findings.
func (w *releaseWorld) run(t *testing.T, rel *Released) ([]int64, []Finding, *Result, error) {
	t.Helper()
	var fs []Finding
	opts := Options{LogURL: w.aURL, TrustedMaterial: fakeRoot(t, w.a, w.b), KeyIDs: []string{w.key.id}, Released: rel, OnFinding: func(f Finding) { fs = append(fs, f) }}
	res, err := Run(context.Background(), opts, w.prev)
	var alerts []int64
	for _, f := range fs {
		if f.Kind == KindUnreleased {
			alerts = append(alerts, f.LogIndex)
		}
	}
	return alerts, fs, res, err
}

// zeros is an all-zero signature.
var zeros = make([]byte, 64)

// TestReleasedMeansVerified: a bundle releases an entry only when it
// verifies under a watched signer and its log entry is proven in the log
// the monitor reads; a copy of a log entry in a bundle releases nothing.
func TestReleasedMeansVerified(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	withoutProof := func(e *protorekor.TransparencyLogEntry) *protorekor.TransparencyLogEntry {
		e = proto.Clone(e).(*protorekor.TransparencyLogEntry)
		e.InclusionProof = nil
		return e
	}
	forgedP := &signed{payload: w.p.payload, sig: zeros}
	pDigest := pae(w.p)
	// Without trusted material nothing verifies: refused, nothing released.
	if bare, _ := NewReleased(ReleaseCheck{KeyIDs: []string{w.key.id}}); bare.AddBundle(context.Background(), dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR))) == nil || bare.Len() != 0 {
		t.Fatal("a bundle released with no trusted material")
	}
	for _, c := range []struct {
		name   string
		bundle []byte
		err    error
		alerts []int64 // unreleased-entry alerts in A
	}{
		{"genuine release", dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR)), nil, []int64{w.iP, w.iX}},
		{"all-zero DSSE signature carrying a copy of the poisoned entry", dsseBundle(t, forgedP, w.a.tlogEntry(t, w.iP)), ErrUnverifiedRelease, []int64{w.iR, w.iP, w.iX}},
		{"all-zero message signature over the poisoned digest, with its entry", messageBundle(t, pDigest, zeros, w.a.tlogEntry(t, w.iP)), ErrUnverifiedRelease, []int64{w.iR, w.iP, w.iX}},
		{"the poisoned signature, its entry without inclusion proof", dsseBundle(t, w.p, withoutProof(w.a.tlogEntry(t, w.iP))), ErrNotBundle, []int64{w.iR, w.iP, w.iX}},
		{"the poisoned signature, no log entry", dsseBundle(t, w.p), ErrUnverifiedRelease, []int64{w.iR, w.iP, w.iX}},
		{"the poisoned signature, the release's entry", dsseBundle(t, w.p, w.a.tlogEntry(t, w.iR)), ErrUnverifiedRelease, []int64{w.iR, w.iP, w.iX}},
		{"genuine, proven only in another log", dsseBundle(t, w.x2, w.b.tlogEntry(t, w.iX2)), nil, []int64{w.iR, w.iP, w.iX}},
		{"genuine in A, the artifact released there", dsseBundle(t, w.x, w.a.tlogEntry(t, w.iX)), nil, []int64{w.iR, w.iP}},
		{"signed by a key not watched", dsseBundle(t, w.u, w.a.tlogEntry(t, w.iU)), ErrUnwatchedRelease, []int64{w.iR, w.iP, w.iX}},
		{"not a bundle", []byte(`{"not":"a bundle"}`), ErrNotBundle, []int64{w.iR, w.iP, w.iX}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, err := NewReleased(w.check(t))
			if err != nil {
				t.Fatal(err)
			}
			err = rel.AddBundle(context.Background(), c.bundle)
			if (err == nil) != (c.err == nil) || (c.err != nil && !errors.Is(err, c.err)) {
				t.Fatalf("AddBundle: %v, want %v", err, c.err)
			}
			if c.err != nil && rel.Len() != 0 {
				t.Fatalf("%d digests released by a bundle that failed", rel.Len())
			}
			alerts, _, res, err := w.run(t, rel)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alerts, c.alerts) {
				t.Errorf("alerts at %v, want %v", alerts, c.alerts)
			}
			// R, P and X are the watched key's; those not alerts released.
			if res.Watched != 3 || res.Released != 3-len(c.alerts) {
				t.Errorf("watched %d, released %d; want 3, %d", res.Watched, res.Released, 3-len(c.alerts))
			}
			if res.State == nil {
				t.Error("no state after a checked range")
			}
		})
	}
}

// pae is the digest a Rekor v2 hashedrekord of s logs.
func pae(s *signed) []byte {
	b, _ := hex.DecodeString(strings.TrimPrefix(s.digest, "sha256:"))
	return b
}

// TestRegistryForgedRelease: a registry lists, under a watched name, a
// bundle with an all-zero signature carrying a copy of the poisoned entry:
// the poisoned entry is an alert, so is the listing, Watch ends with
// ErrUnverifiedListing and the state file is left as it was. The genuine
// release listed beside it is released; without the forgery the run
// writes its state.
func TestRegistryForgedRelease(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	genuine := dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR))
	forged := dsseBundle(t, &signed{payload: w.p.payload, sig: zeros}, w.a.tlogEntry(t, w.iP))
	unwatched := dsseBundle(t, w.u, w.a.tlogEntry(t, w.iU))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/genuine.sigstore.json":
			rw.Write(genuine)
		case "/forged.sigstore.json":
			rw.Write(forged)
		case "/unwatched.sigstore.json":
			rw.Write(unwatched)
		default:
			http.NotFound(rw, r)
		}
	}))
	defer srv.Close()
	entry := func(version, path string, b []byte) string {
		return `{"name":"io.github.acme/notes","version":"` + version + `","description":"d","_meta":{"` + registry.PublisherProvided + `":{"` +
			registry.AttestationMember + `":{"bundleUrl":"` + srv.URL + path + `","bundleDigest":"` + registry.PointerDigest(b) + `"}}}}`
	}
	for _, c := range []struct {
		name    string
		entries []string
		kinds   []string
		err     error
	}{
		{"forged listing", []string{entry("1.0.0", "/genuine.sigstore.json", genuine), entry("1.0.1", "/forged.sigstore.json", forged)},
			[]string{KindUnreleased + " 2", KindUnreleased + " 4", KindUnverifiedRelease + " -1"}, ErrUnverifiedListing},
		{"genuine only", []string{entry("1.0.0", "/genuine.sigstore.json", genuine)},
			[]string{KindUnreleased + " 2", KindUnreleased + " 4"}, nil},
		{"another signer's bundle listed", []string{entry("1.0.0", "/genuine.sigstore.json", genuine), entry("0.9.0", "/unwatched.sigstore.json", unwatched)},
			[]string{KindUnreleased + " 2", KindUnreleased + " 4", KindUnwatchedRelease + " -1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "servers.jsonl")
			if err := os.WriteFile(src, []byte(strings.Join(c.entries, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			statePath := filepath.Join(dir, "state.json")
			if err := WriteState(statePath, w.prev); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(statePath)
			rel, err := NewReleased(w.check(t))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var text bytes.Buffer
			rep := &Reporter{W: &text}
			opts := Options{LogURL: w.aURL, TrustedMaterial: fakeRoot(t, w.a, w.b), KeyIDs: []string{w.key.id}, Released: rel, OnFinding: func(f Finding) {
				kinds = append(kinds, f.Kind+" "+itoa(f.LogIndex))
				rep.Finding(f)
			}}
			var res *Result
			alerts, err := Watch(context.Background(), opts, w.prev, WatchOptions{StatePath: statePath, OnRun: func(r *Result) { res = r },
				BeforeRun: RegistryRefresh(rel, []string{src}, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client(), BundleAddresses: source.LoopbackAddresses})})
			if (err == nil) != (c.err == nil) || (c.err != nil && !errors.Is(err, c.err)) {
				t.Fatalf("Watch: %v, want %v", err, c.err)
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("findings %v, want %v", kinds, c.kinds)
			}
			want, notices := 0, 0
			for _, k := range c.kinds {
				if !strings.HasPrefix(k, KindUnwatchedRelease) {
					want++
				} else {
					notices++
				}
			}
			if alerts != want {
				t.Errorf("%d alerts, want %d", alerts, want)
			}
			// A run that completes counts the listing's findings: an
			// alert each, a notice each.
			if c.err == nil && (res == nil || res.Alerts != want || res.Notices != notices) {
				t.Errorf("the run's result %+v, want %d alerts and %d notices", res, want, notices)
			}
			after, _ := os.ReadFile(statePath)
			if moved := !bytes.Equal(before, after); moved != (c.err == nil) {
				t.Errorf("state moved: %v", moved)
			}
			if c.err != nil && !strings.Contains(text.String(), `registry "`+src+`" entry "io.github.acme/notes" version "1.0.1", bundle "`+srv.URL+`/forged.sigstore.json"`) {
				t.Errorf("the alert does not name the listing:\n%s", text.String())
			}
		})
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// hexID is the ID of l as the trusted root keys it.
func hexID(l *fakeLog) string { return hex.EncodeToString(l.id) }

// TestAddDirReadsEveryFile: --released DIR reads every regular file; what
// is not a bundle, or a bundle of a signer not watched, is skipped and
// said, with why; a bundle-named file that is not a bundle and a bundle
// of the watched key that does not verify are errors naming the file.
func TestAddDirReadsEveryFile(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	genuine := dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR))
	for _, c := range []struct {
		name     string
		files    map[string][]byte
		added    int
		skipped  []string
		errNames string
	}{
		{"a bundle of any name", map[string][]byte{"notes-1.0.0.json": genuine, "README.md": []byte("# notes\n")}, 1, []string{"README.md"}, ""},
		{"an attestation named .intoto.jsonl", map[string][]byte{"sub/notes.intoto.jsonl": genuine}, 1, nil, ""},
		{"a bundle of another key", map[string][]byte{"other.sigstore.json": dsseBundle(t, w.u, w.a.tlogEntry(t, w.iU))}, 0, []string{"other.sigstore.json"}, ""},
		{"a bundle name that is no bundle", map[string][]byte{"bad.sigstore.json": []byte("{}")}, 0, nil, "bad.sigstore.json"},
		{"a forged bundle of the watched key", map[string][]byte{"forged.json": dsseBundle(t, &signed{payload: w.p.payload, sig: zeros}, w.a.tlogEntry(t, w.iP))}, 0, nil, "forged.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rel, err := NewReleased(w.check(t))
			if err != nil {
				t.Fatal(err)
			}
			n, skipped, err := rel.AddDir(context.Background(), dir)
			if (err != nil) != (c.errNames != "") || (err != nil && !strings.Contains(err.Error(), c.errNames)) {
				t.Fatalf("AddDir: %v, want an error naming %q", err, c.errNames)
			}
			if err != nil {
				return
			}
			var names []string
			for _, s := range skipped {
				rel, _ := filepath.Rel(dir, s.Path)
				names = append(names, filepath.ToSlash(rel))
				if s.Err == nil || s.String() == s.Path+": " {
					t.Errorf("%s skipped without a reason", s.Path)
				}
			}
			if n != c.added || !slices.Equal(names, c.skipped) {
				t.Errorf("added %d, skipped %v; want %d, %v", n, names, c.added, c.skipped)
			}
			if c.added > 0 && !rel.releasedIn(w.r.digest, []string{hexID(w.a)}) {
				t.Errorf("the release is not released in A")
			}
		})
	}
}

// FuzzAddBundle: whatever the bytes, AddBundle does not panic, and a
// bundle that fails releases nothing; what passes is released only in a
// trusted log of the test (A or B).
func FuzzAddBundle(f *testing.F) {
	w := newReleaseWorld(f)
	f.Add(dsseBundle(f, w.r, w.a.tlogEntry(f, w.iR)))
	f.Add(dsseBundle(f, &signed{payload: w.p.payload, sig: zeros}, w.a.tlogEntry(f, w.iP)))
	f.Add(messageBundle(f, pae(w.p), zeros, w.a.tlogEntry(f, w.iP)))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	check := ReleaseCheck{TrustedMaterial: fakeRoot(f, w.a, w.b), KeyIDs: []string{w.key.id}}
	f.Fuzz(func(t *testing.T, data []byte) {
		rel, err := NewReleased(check)
		if err != nil {
			t.Fatal(err)
		}
		if err := rel.AddBundle(context.Background(), data); err != nil {
			if rel.Len() != 0 {
				t.Fatalf("%d digests released by a bundle that failed: %v", rel.Len(), err)
			}
			return
		}
		for d, logs := range rel.digests {
			for id := range logs {
				if id != hexID(w.a) && id != hexID(w.b) {
					t.Fatalf("%s released in an unknown log %s", d, id)
				}
			}
			if logs == nil {
				t.Fatalf("%s released in every log by a bundle", d)
			}
		}
	})
}

// TestReleasedLogs: a digest released by bundles is released in the union
// of their logs, and one given as released (AddDigest) stays released in
// every log whatever bundle adds it again, before or after.
func TestReleasedLogs(t *testing.T) {
	t.Parallel()
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name   string
		add    func(r *Released)
		in, no []string
	}{
		{"two bundles", func(r *Released) { r.addIn(d, map[string]bool{"a": true}); r.addIn(d, map[string]bool{"b": true}) }, []string{"a", "b"}, []string{"c"}},
		{"given, then a bundle", func(r *Released) { _ = r.AddDigest(d); r.addIn(d, map[string]bool{"b": true}) }, []string{"a", "b", "c"}, nil},
		{"a bundle, then given", func(r *Released) { r.addIn(d, map[string]bool{"b": true}); _ = r.AddDigest(d) }, []string{"a", "b", "c"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewReleased(ReleaseCheck{})
			if err != nil {
				t.Fatal(err)
			}
			c.add(r)
			for _, id := range c.in {
				if !r.releasedIn(d, []string{id}) {
					t.Errorf("not released in %s", id)
				}
			}
			for _, id := range c.no {
				if r.releasedIn(d, []string{id}) {
					t.Errorf("released in %s", id)
				}
			}
		})
	}
}
