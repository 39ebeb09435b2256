package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

const dg = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

func serverJSON(name, version string, extra string) string {
	return `{"name":"` + name + `","version":"` + version + `","description":"d"` + extra + `}`
}

func pointerMeta(url, digest string) string {
	return `,"_meta":{"` + PublisherProvided + `":{"` + AttestationMember + `":{"bundleUrl":"` + url + `","bundleDigest":"` + digest + `"}}}`
}

func TestParseEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		err      error // from ParseEntry
		attErr   error // Entry.AttestationErr
		ptrs     int
	}{
		{"bare", serverJSON("a/b", "1", pointerMeta("https://x/b", dg)), nil, nil, 1},
		{"api entry", `{"server":` + serverJSON("a/b", "1", pointerMeta("https://x/b", dg)) + `,"_meta":{}}`, nil, nil, 1},
		{"list", serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":[{"bundleUrl":"https://x/1","bundleDigest":"`+dg+`"},{"bundleUrl":"https://x/2","bundleDigest":"`+strings.Replace(dg, "1", "2", -1)+`"}]}}`), nil, nil, 2},
		{"none", serverJSON("a/b", "1", ""), nil, ErrNoAttestation, 0},
		{"http bundle", serverJSON("a/b", "1", pointerMeta("http://x/b", dg)), nil, ErrAttestation, 0},
		{"no digest", serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":{"bundleUrl":"https://x/b"}}}`), nil, ErrAttestation, 0},
		{"inline bundle", serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":{"bundle":{}}}}`), nil, ErrAttestation, 0},
		{"same bundle twice", serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":[{"bundleUrl":"https://x/1","bundleDigest":"`+dg+`"},{"bundleUrl":"https://x/2","bundleDigest":"`+dg+`"}]}}`), nil, ErrAttestation, 0},
		{"repeated version", `{"name":"a/b","version":"1","version":"2"}`, ErrEntry, nil, 0},
		{"case variant", `{"name":"a/b","Version":"2","version":"1"}`, ErrEntry, nil, 0},
		{"no version", `{"name":"a/b"}`, ErrEntry, nil, 0},
		{"deep", `{"name":"a/b","version":"1","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, ErrEntry, nil, 0},
		{"both forms", `{"server":{},"name":"a/b"}`, ErrEntry, nil, 0},
		{"bad package", serverJSON("a/b", "1", `,"packages":[{"registryType":"npm"}]`), ErrEntry, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(c.in), Limits{})
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if !errors.Is(e.AttestationErr, c.attErr) || (c.attErr == nil) != (e.AttestationErr == nil) {
				t.Fatalf("attestation err %v, want %v", e.AttestationErr, c.attErr)
			}
			if len(e.Pointers) != c.ptrs {
				t.Fatalf("%d pointers, want %d", len(e.Pointers), c.ptrs)
			}
		})
	}
}

func TestEntryTooLarge(t *testing.T) {
	t.Parallel()
	big := serverJSON("a/b", "1", `,"x":"`+strings.Repeat("a", 300<<10)+`"`)
	if _, err := ParseEntry([]byte(big), Limits{}); !errors.Is(err, ErrEntry) {
		t.Fatalf("err %v", err)
	}
}

func TestReadDump(t *testing.T) {
	t.Parallel()
	e1, e2 := serverJSON("a/b", "1", ""), serverJSON("a/c", "2", "")
	page := `{"servers":[{"server":` + e1 + `},{"server":` + e2 + `}],"metadata":{"count":2}}`
	for _, c := range []struct {
		name, in string
		n        int
		err      bool
	}{
		{"lines", e1 + "\n" + e2 + "\n", 2, false},
		{"array", "[" + e1 + "," + e2 + "]", 2, false},
		{"page", page, 2, false},
		{"mixed", page + "\n[" + e1 + "]\n" + e2, 4, false},
		{"empty", "  \n", 0, false},
		{"garbage", e1 + "\n{", 1, true},
		{"stray", "]", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			err := ReadDump(strings.NewReader(c.in), Limits{}, func([]byte) error { n++; return nil })
			if (err != nil) != c.err || n != c.n {
				t.Fatalf("%d entries, err %v", n, err)
			}
		})
	}
	// A value over the bound is refused before it is all read.
	huge := `{"name":"a/b","version":"1","x":"` + strings.Repeat("a", 1<<20) + `"}`
	err := ReadDump(strings.NewReader(huge), Limits{MaxPageBytes: 64 << 10}, func([]byte) error { return nil })
	if !errors.Is(err, ErrPage) {
		t.Fatalf("huge value: %v", err)
	}
	err = ReadDump(strings.NewReader(e1+e1+e1), Limits{MaxEntries: 2}, func([]byte) error { return nil })
	if !errors.Is(err, ErrPage) {
		t.Fatalf("entries bound: %v", err)
	}
}

// hostileRegistry serves pages chosen by the test on /v0.1/servers.
func hostileRegistry(t *testing.T, page func(cursor string, n int) (int, string)) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		if r.URL.Path != "/v0.1/servers" {
			http.NotFound(w, r)
			return
		}
		status, body := page(r.URL.Query().Get("cursor"), n)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestClientHostile(t *testing.T) {
	t.Parallel()
	entry := `{"server":` + serverJSON("a/b", "1", "") + `}`
	many := strings.TrimSuffix(strings.Repeat(entry+",", 1001), ",")
	for _, c := range []struct {
		name  string
		page  func(cursor string, n int) (int, string)
		want  string
		calls int64 // at most
	}{
		{"cursor loop", func(cur string, n int) (int, string) {
			next := map[string]string{"": "a", "a": "b", "b": "a"}[cur]
			return 200, `{"servers":[` + entry + `],"metadata":{"nextCursor":"` + next + `"}}`
		}, "loops", 3},
		{"page flood", func(string, int) (int, string) {
			return 200, `{"servers":[` + many + `],"metadata":{}}`
		}, "servers in one page", 1},
		{"endless pages", func(cur string, n int) (int, string) {
			return 200, fmt.Sprintf(`{"servers":[%s],"metadata":{"nextCursor":"c%d"}}`, entry, n)
		}, "more than 5 pages", 5},
		{"empty page with cursor", func(string, int) (int, string) {
			return 200, `{"servers":[],"metadata":{"nextCursor":"x"}}`
		}, "empty page", 1},
		{"garbage", func(string, int) (int, string) { return 200, `{"servers":[` }, "invalid registry page", 1},
		{"huge", func(string, int) (int, string) {
			return 200, `{"servers":[],"x":"` + strings.Repeat("a", 2<<20) + `"}`
		}, "larger", 1},
		{"status", func(string, int) (int, string) { return 500, "no" }, "status 500", 1},
		{"repeated member", func(string, int) (int, string) { return 200, `{"servers":[],"servers":[]}` }, "repeated", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, calls := hostileRegistry(t, c.page)
			cl := Client{Base: srv.URL, HTTPClient: srv.Client(), Limits: Limits{MaxPages: 5, MaxPageBytes: 1 << 20}}
			err := cl.Each(context.Background(), func([]byte) error { return nil })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if calls.Load() > c.calls {
				t.Fatalf("%d requests, at most %d", calls.Load(), c.calls)
			}
		})
	}
}

func TestClientPagesAndFallback(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v0/servers" && r.URL.Query().Get("cursor") == "":
			fmt.Fprint(w, `{"servers":[{"server":`+serverJSON("a/b", "1", "")+`}],"metadata":{"nextCursor":"n1"}}`)
		case r.URL.Path == "/v0/servers" && r.URL.Query().Get("cursor") == "n1":
			fmt.Fprint(w, `{"servers":[{"server":`+serverJSON("a/c", "1", "")+`}],"metadata":{}}`)
		case r.URL.Path == "/v0/servers/a%2Fb/versions/1" || r.URL.RawPath == "/v0/servers/a%2Fb/versions/1":
			fmt.Fprint(w, `{"server":`+serverJSON("a/b", "1", "")+`}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cl := Client{Base: srv.URL}
	err := cl.Each(context.Background(), func(raw []byte) error {
		e, err := ParseEntry(raw, Limits{})
		if err != nil {
			return err
		}
		got = append(got, e.Name)
		return nil
	})
	if err != nil || strings.Join(got, ",") != "a/b,a/c" {
		t.Fatalf("%v %v", got, err)
	}
	e, err := cl.Version(context.Background(), "a/b", "1")
	if err != nil || e.Name != "a/b" {
		t.Fatalf("version: %v %v", e, err)
	}
	// A plain-http registry that is not on loopback is refused.
	if err := (&Client{Base: "http://registry.example.com"}).Each(context.Background(), nil); !errors.Is(err, ErrFetch) {
		t.Fatalf("http: %v", err)
	}
}

func TestPackageBinding(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	st := func(version string, pkgs ...attest.Package) *attest.Statement {
		s := &attest.Statement{}
		s.Predicate.Server.Version = version
		s.Predicate.Package = pkgs
		return s
	}
	for _, c := range []struct {
		name string
		pkg  Package
		st   *attest.Statement
		ok   bool
	}{
		{"npm scoped", Package{RegistryType: "npm", Identifier: "@acme/notes", Version: "1.0.0"}, st("1.0.0", attest.Package{PURL: "pkg:npm/%40acme/notes@1.0.0"}), true},
		{"npm other version", Package{RegistryType: "npm", Identifier: "@acme/notes", Version: "1.0.1"}, st("1.0.0", attest.Package{PURL: "pkg:npm/%40acme/notes@1.0.0"}), false},
		{"npm other package", Package{RegistryType: "npm", Identifier: "@acme/other", Version: "1.0.0"}, st("1.0.0", attest.Package{PURL: "pkg:npm/%40acme/notes@1.0.0"}), false},
		{"pypi normalized", Package{RegistryType: "pypi", Identifier: "Acme_Notes", Version: "1.0.0"}, st("1.0.0", attest.Package{PURL: "pkg:pypi/acme-notes@1.0.0"}), true},
		{"mcpb", Package{RegistryType: "mcpb", Identifier: "https://x/n.mcpb", FileSHA256: h}, st("1.0.0", attest.Package{PURL: "pkg:generic/n@1.0.0", Digest: map[string]string{"sha256": h}}), true},
		{"mcpb other file", Package{RegistryType: "mcpb", Identifier: "https://x/n.mcpb", FileSHA256: h}, st("1.0.0", attest.Package{PURL: "pkg:generic/n@1.0.0", Digest: map[string]string{"sha256": strings.Repeat("cd", 32)}}), false},
		{"mcpb no hash", Package{RegistryType: "mcpb", Identifier: "https://x/n.mcpb"}, st("1.0.0"), false},
		{"oci digest", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/notes@sha256:" + h}, st("1.0.0", attest.Package{PURL: "pkg:oci/notes", Digest: map[string]string{"sha256": h}}), true},
		{"oci fileSha256 agrees", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/notes@sha256:" + h, FileSHA256: h}, st("1.0.0", attest.Package{PURL: "pkg:oci/notes", Digest: map[string]string{"sha256": h}}), true},
		{"oci fileSha256 contradicts", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/notes@sha256:" + h, FileSHA256: strings.Repeat("cd", 32)}, st("1.0.0", attest.Package{PURL: "pkg:oci/notes", Digest: map[string]string{"sha256": h}}), false},
		{"oci tag only", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/notes:1.0.0"}, st("1.0.0", attest.Package{PURL: "pkg:oci/notes", Digest: map[string]string{"sha256": h}}), false},
		{"npm fileSha256 contradicts", Package{RegistryType: "npm", Identifier: "n", Version: "1.0.0", FileSHA256: h}, st("1.0.0", attest.Package{PURL: "pkg:npm/n@1.0.0", Digest: map[string]string{"sha256": strings.Repeat("cd", 32)}}), false},
		{"unknown type", Package{RegistryType: "cargo", Identifier: "n", Version: "1"}, st("1.0.0"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &Entry{Name: "a/b", Version: "1.0.0", Packages: []Package{c.pkg}}
			err := CheckBinding(e, c.st)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			if err != nil && !errors.Is(err, ErrBinding) {
				t.Fatalf("not ErrBinding: %v", err)
			}
		})
	}
	if err := CheckBinding(&Entry{Version: "2.0.0"}, st("1.0.0")); !errors.Is(err, ErrBinding) {
		t.Fatalf("another version: %v", err)
	}
}

func TestShard(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "1", "4/4", "-1/4", "0/0", "01/4", "a/b", "0/70000", "0/65537", "1/1", "0/x", "x/4", "0/04", "0/+4"} {
		if _, err := ParseShard(bad); !errors.Is(err, ErrShard) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, good := range []string{"0/1", "0/4", "3/4", "0/65536", "65535/65536"} {
		if s, err := ParseShard(good); err != nil || s.String() != good {
			t.Errorf("%q: %v %v", good, s, err)
		}
	}
	counts := make([]int, 4)
	for i := range 1000 {
		name := fmt.Sprintf("io.github.x%d/s", i)
		in := 0
		for j := range 4 {
			if (Shard{I: j, N: 4}).Contains(name) {
				in++
				counts[j]++
			}
		}
		if in != 1 {
			t.Fatalf("%s in %d shards", name, in)
		}
	}
	for j, c := range counts {
		if c < 150 {
			t.Errorf("shard %d has %d of 1000", j, c)
		}
	}
	// Names that differ only in case are one server to the duplicate rule:
	// they must meet in one shard, or two shards' runs each verify one copy
	// (io.github.acme/notes and io.github.acme/Notes fall 1 and 2 of 3 by
	// the exact name).
	for _, n := range []int{2, 3, 10, 16} {
		for j := range n {
			s := Shard{I: j, N: n}
			if a, b := s.Contains("io.github.acme/notes"), s.Contains("io.github.acme/Notes"); a != b {
				t.Errorf("shard %v: io.github.acme/notes in it %v, io.github.acme/Notes %v", s, a, b)
			}
		}
	}
}

func TestHint(t *testing.T) {
	t.Parallel()
	in := "{\n  \"name\": \"a/b\",\n  \"version\": \"1.0.0\", // no\n  \"description\": \"d\"\n}\n"
	in = strings.Replace(in, " // no", "", 1)
	p := Pointer{URL: "https://example.com/b.json", Digest: dg}
	out, err := Hint([]byte(in), []Pointer{p})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "{\n  \"name\": \"a/b\",\n  \"version\": \"1.0.0\",\n  \"description\": \"d\",\n  \"_meta\": ") {
		t.Fatalf("layout not kept:\n%s", out)
	}
	e, err := ParseServer(out, Limits{})
	if err != nil || len(e.Pointers) != 1 || e.Pointers[0] != p {
		t.Fatalf("%+v %v", e, err)
	}
	// Again, the pointer the block's first member: replaced.
	p3 := Pointer{URL: "https://example.com/d.json", Digest: dg}
	if again, err := Hint(out, []Pointer{p3}); err != nil {
		t.Errorf("hinted again: %v", err)
	} else if e, err := ParseServer(again, Limits{}); err != nil || len(e.Pointers) != 1 || e.Pointers[0] != p3 {
		t.Errorf("hinted again: %+v %v", e, err)
	}
	// Again, with two: replaced, other _meta members kept.
	withOther := strings.Replace(string(out), `"dev.mcpsign/attestation"`, `"other": 1, "dev.mcpsign/attestation"`, 1)
	p2 := Pointer{URL: "https://example.com/c.json", Digest: strings.Replace(dg, "1", "3", -1)}
	out2, err := Hint([]byte(withOther), []Pointer{p, p2})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out2, []byte(`"other": 1`)) {
		t.Fatalf("other member lost: %s", out2)
	}
	if e, err := ParseServer(out2, Limits{}); err != nil || len(e.Pointers) != 2 {
		t.Fatalf("%+v %v", e, err)
	}
	// A member added in an existing object is indented as the document's
	// members are, one level deeper (tabs here, not the default two spaces).
	tabbed := "{\n\t\"name\": \"a/b\",\n\t\"version\": \"1\",\n\t\"_meta\": {\n\t}\n}\n"
	if out, err := Hint([]byte(tabbed), []Pointer{p}); err != nil || !strings.HasPrefix(string(out), "{\n\t\"name\": \"a/b\",\n\t\"version\": \"1\",\n\t\"_meta\": {\n\t\t\""+PublisherProvided+"\": {") {
		t.Errorf("layout not kept: %q %v", out, err)
	}
	if _, err := Hint([]byte(in), nil); !errors.Is(err, ErrHint) {
		t.Errorf("no pointer: %v", err)
	}
	// A refused pointer is named by its place, from 1.
	for _, bad := range []Pointer{{URL: "http://x/b", Digest: dg}, {URL: "https://x/b", Digest: "sha256:AB"}} {
		if _, err := Hint([]byte(in), []Pointer{bad}); !errors.Is(err, ErrHint) || !strings.Contains(err.Error(), ": bundle 1: bundle") {
			t.Errorf("%v: %v", bad, err)
		}
		if _, err := Hint([]byte(in), []Pointer{p, bad}); !errors.Is(err, ErrHint) || !strings.Contains(err.Error(), ": bundle 2: bundle") {
			t.Errorf("%v second: %v", bad, err)
		}
	}
	if _, err := Hint([]byte(`{"name":"a","name":"b"}`), []Pointer{p}); !errors.Is(err, ErrHint) {
		t.Errorf("repeated member: %v", err)
	}
	// The registry keeps 4,096 bytes of publisher-provided _meta, counted
	// compact (its white space is not kept): a block of exactly 4,096
	// bytes is written, one of 4,097 refused.
	if !regexp.MustCompile(`"` + regexp.QuoteMeta(AttestationMember) + `":\s*\{"bundleUrl"`).Match(out) {
		t.Errorf("one pointer not written as an object: %s", out)
	}
	sized := func(pad int) string {
		return "{\"name\": \"a/b\", \"version\": \"1\", \"_meta\": {\"" + PublisherProvided + "\": {\n    \"x\":  \"" + strings.Repeat("a", pad) + "\"\n  }}}"
	}
	var lastOK []byte
	pad := MaxPublisherProvidedBytes - 300
	for ; pad < MaxPublisherProvidedBytes; pad++ {
		out, err := Hint([]byte(sized(pad)), []Pointer{p})
		if err != nil {
			if !errors.Is(err, ErrHint) || !strings.Contains(err.Error(), fmt.Sprintf("would be %d bytes", MaxPublisherProvidedBytes+1)) {
				t.Fatalf("pad %d: %v, want refused at 4097 bytes", pad, err)
			}
			break
		}
		lastOK = out
	}
	if lastOK == nil || pad == MaxPublisherProvidedBytes {
		t.Fatalf("no bound found between pads %d and %d", MaxPublisherProvidedBytes-300, pad)
	}
	_, m, _ := jsonMembers(lastOK)
	_, meta, _ := jsonMembers(m["_meta"])
	if n := len(compact(meta[PublisherProvided])); n != MaxPublisherProvidedBytes || len(meta[PublisherProvided]) == n {
		t.Errorf("the largest block written is %d bytes compact (%d as written), want %d", n, len(meta[PublisherProvided]), MaxPublisherProvidedBytes)
	}
}

func TestDumpRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := NewDumpWriter(&buf)
	for i := range 3 {
		e, err := ParseServer([]byte(serverJSON(fmt.Sprintf("a/b%d", i), "1", pointerMeta("https://x/b", dg))), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		r := &Result{Name: e.Name, Version: e.Version, Verified: true, Policy: "a/*", Bundles: []string{dg},
			Signers: []Signer{{Method: "sigstore", Identity: "https://github.com/a/b/.github/workflows/r.yml@refs/tags/v1"}}, VerifiedAt: "2026-01-01T00:00:00Z", entry: e}
		if err := d.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var seed []map[string]json.RawMessage // the official registry's seed format
	if err := json.Unmarshal(buf.Bytes(), &seed); err != nil || len(seed) != 3 {
		t.Fatalf("%v %d", err, len(seed))
	}
	n := 0
	err := ReadDump(&buf, Limits{}, func(raw []byte) error {
		e, err := ParseEntry(raw, Limits{})
		if err != nil || len(e.Pointers) != 1 {
			return fmt.Errorf("%v %v", e, err)
		}
		_, m, _ := jsonMembers(raw)
		_, meta, _ := jsonMembers(m["_meta"])
		var vb VerifiedBlock
		if err := json.Unmarshal(meta[VerifiedMember], &vb); err != nil || vb.Policy != "a/*" || len(vb.Signers) != 1 {
			return fmt.Errorf("verified block %s: %v", meta[VerifiedMember], err)
		}
		n++
		return nil
	})
	if err != nil || n != 3 {
		t.Fatal(n, err)
	}
	if err := NewDumpWriter(&buf).Add(&Result{}); err == nil {
		t.Fatal("a failed result was written")
	}
}

// TestRunStopsOnEmitError: an Emit error ends the run, however many
// entries are still in flight, and is returned.
func TestRunStopsOnEmitError(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Options{Policy: pf})
	if err != nil {
		t.Fatal(err)
	}
	list := func(fn func([]byte) error) error {
		for i := range 10000 {
			if err := fn([]byte(serverJSON(fmt.Sprintf("a/b%d", i), "1", ""))); err != nil {
				return err
			}
		}
		return nil
	}
	stop := errors.New("stop")
	n := 0
	sum, err := v.Run(context.Background(), list, RunOptions{Workers: 4, Emit: func(r *Result) error {
		if n++; n == 3 {
			return stop
		}
		if r.Step != StepPolicy {
			t.Errorf("%+v", r)
		}
		return nil
	}})
	if !errors.Is(err, stop) || sum.Entries > 3 {
		t.Fatalf("%+v %v", sum, err)
	}
	// And a listing's error after some entries.
	bad := errors.New("page 2 loops")
	sum, err = v.Run(context.Background(), func(fn func([]byte) error) error {
		fn([]byte(serverJSON("a/b", "1", "")))
		return bad
	}, RunOptions{})
	if !errors.Is(err, bad) || sum.Entries != 1 || sum.Unmatched != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
}

// TestPolicyStep: an entry no policy server names is unmatched; one whose
// policy server cannot verify anything (no identity) fails, naming it.
func TestPolicyStep(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := New(Options{Policy: pf})
	var got []*Result
	sum, err := v.Run(context.Background(), func(fn func([]byte) error) error {
		fn([]byte(serverJSON("a/b", "1", pointerMeta("https://x/b", dg))))
		return fn([]byte(serverJSON("c/d", "1", "")))
	}, RunOptions{Emit: func(r *Result) error { got = append(got, r); return nil }})
	if err != nil || sum.Failed != 1 || sum.Unmatched != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	if got[0].Step != StepPolicy || got[0].Policy != "a/*" || !strings.Contains(got[0].Reason, "names no identity") {
		t.Errorf("%+v", got[0])
	}
	if got[1].Step != StepPolicy || got[1].Policy != "" {
		t.Errorf("%+v", got[1])
	}
}

// TestCheckRepositorySigner: a signer that counted for the identity
// derived from the entry's repository must carry that repository as the
// certificate's source repository (Fulcio 1.3.6.1.4.1.57264.1.12).
func TestCheckRepositorySigner(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a.b/*":{"repositorySigner":{"owner":"acme","repositories":["*"]}}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := pf.ResolveRegistry("a.b/c")
	if err != nil {
		t.Fatal(err)
	}
	e := &Entry{Name: "a.b/c", RepositoryURL: "https://github.com/acme/notes"}
	if r, err = r.ForRepository(e.RepositoryURL); err != nil {
		t.Fatal(err)
	}
	signer := func(repo string) *policy.Decision {
		c := &certificate.Summary{}
		c.Extensions.SourceRepositoryURI = repo
		return &policy.Decision{Signers: []policy.Signer{{Result: &verify.Result{Certificate: c}, Identities: []int{0}}}}
	}
	if err := checkRepositorySigner(r, e, signer("https://github.com/acme/notes")); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"https://github.com/evil/notes", "https://github.com/ACME/notes", ""} {
		if err := checkRepositorySigner(r, e, signer(other)); !errors.Is(err, policy.ErrNoRepositorySigner) {
			t.Errorf("%q: %v", other, err)
		}
	}
}

// TestBoundVersion: the dump's "bound" names a package's version only
// where the statement binds it (an npm, PyPI or NuGet package URL), not
// for an OCI image or an MCPB file, which their SHA-256 binds (found by the
// review pass: the dump said /packages/0/version was bound for both).
func TestBoundVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pkg  string
		want bool
	}{
		{`{"registryType":"npm","identifier":"@acme/notes","version":"1.2.0","transport":{"type":"stdio"}}`, true},
		{`{"registryType":"pypi","identifier":"acme-notes","version":"1.2.0","transport":{"type":"stdio"}}`, true},
		{`{"registryType":"oci","identifier":"ghcr.io/acme/notes@sha256:` + strings.Repeat("a", 64) + `","version":"1.2.0","transport":{"type":"stdio"}}`, false},
		{`{"registryType":"mcpb","identifier":"https://example.com/notes.mcpb","version":"1.2.0","fileSha256":"` + strings.Repeat("b", 64) + `","transport":{"type":"stdio"}}`, false},
	} {
		raw := `{"name":"io.github.acme/notes","description":"d","version":"1.2.0","packages":[` + tt.pkg + `]}`
		e, err := ParseServer([]byte(raw), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tt.pkg, err)
		}
		if got := slices.Contains(e.Bound, "/packages/0/version"); got != tt.want {
			t.Errorf("%s: /packages/0/version bound %v, want %v (bound %v)", tt.pkg, got, tt.want, e.Bound)
		}
	}
}

// TestParsePage: a registry API page read strictly: its entries and next
// cursor; each bound (the page's bytes, its entries, the cursor's bytes)
// inclusive; what is not a page refused with ErrPage.
func TestParsePage(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxPageBytes: 200, MaxPageEntries: 3}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	for _, c := range []struct {
		name, page string
		entries    int
		next       string
		err        string // "" when it reads
	}{
		{"two entries and a cursor", `{"servers":[{"a":1},{"b":2}],"metadata":{"nextCursor":"c1","count":2}}`, 2, "c1", ""},
		{"no metadata", `{"servers":[]}`, 0, "", ""},
		{"servers null, metadata null", `{"servers":null,"metadata":null}`, 0, "", ""},
		{"cursor null", `{"servers":[],"metadata":{"nextCursor":null}}`, 0, "", ""},
		{"white space around", " \n{\"servers\":[{}]}\n", 1, "", ""},
		{"the most entries", `{"servers":[{},{},{}]}`, 3, "", ""},
		{"one entry too many", `{"servers":[{},{},{},{}]}`, 0, "", "more than 3 servers"},
		{"the most bytes", pad(`{"servers":[{}]}`, 200), 1, "", ""},
		{"one byte too many", pad(`{"servers":[{}]}`, 201), 0, "", "201 bytes, at most 200"},
		{"a cursor of 4096 bytes", `{"servers":[],"metadata":{"nextCursor":"` + strings.Repeat("c", 4096) + `"}}`, 0, strings.Repeat("c", 4096), ""},
		{"a cursor of 4097 bytes", `{"servers":[],"metadata":{"nextCursor":"` + strings.Repeat("c", 4097) + `"}}`, 0, "", "longer than 4096"},
		{"a cursor not a string", `{"servers":[],"metadata":{"nextCursor":1}}`, 0, "", "nextCursor"},
		{"not an object", `[]`, 0, "", "not a JSON object"},
		{"empty", ``, 0, "", "not a JSON object"},
		{"no servers", `{"metadata":{}}`, 0, "", `no "servers"`},
		{"servers not an array", `{"servers":{}}`, 0, "", "not a JSON array"},
		{"servers repeated", `{"servers":[],"servers":[]}`, 0, "", `repeated member "servers"`},
		{"a case variant", `{"servers":[],"Servers":[]}`, 0, "", "Servers"},
		{"data after", `{"servers":[]} {}`, 0, "", "unexpected data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := lim
			if strings.Contains(c.name, "cursor") {
				l.MaxPageBytes = 8192
			}
			entries, next, err := ParsePage([]byte(c.page), l)
			if c.err != "" {
				if !errors.Is(err, ErrPage) || !strings.Contains(err.Error(), c.err) || entries != nil {
					t.Fatalf("error %v, entries %d; want ErrPage with %q", err, len(entries), c.err)
				}
				return
			}
			if err != nil || len(entries) != c.entries || next != c.next || entries == nil {
				t.Fatalf("%d entries, next %.10q, error %v; want %d, %.10q", len(entries), next, err, c.entries, c.next)
			}
		})
	}
}

// TestBoundReader: one read returns at most what is left of the bound,
// and the read after the bound fails with ErrPage.
func TestBoundReader(t *testing.T) {
	t.Parallel()
	b := &boundReader{r: strings.NewReader(strings.Repeat("a", 100)), limit: 10}
	p := make([]byte, 64)
	if n, err := b.Read(p[:4]); n != 4 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	if n, err := b.Read(p); n != 6 || err != nil {
		t.Fatalf("second read: %d %v, want the 6 bytes left of the bound", n, err)
	}
	if n, err := b.Read(p); n != 0 || !errors.Is(err, ErrPage) {
		t.Fatalf("past the bound: %d %v", n, err)
	}
}

// TestReadDumpMaxEntries: a file of MaxEntries entries is read whole, one
// of more is refused at the entry past the bound.
func TestReadDumpMaxEntries(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 4} {
		var lines []string
		for i := range n {
			lines = append(lines, serverJSON(fmt.Sprintf("a/b%d", i), "1", ""))
		}
		got := 0
		err := ReadDump(strings.NewReader(strings.Join(lines, "\n")), Limits{MaxEntries: 3}, func([]byte) error { got++; return nil })
		if n == 3 && (err != nil || got != 3) {
			t.Errorf("3 entries: %d read, %v", got, err)
		}
		if n == 4 && (!errors.Is(err, ErrPage) || !strings.Contains(err.Error(), "more than 3 entries") || got != 3) {
			t.Errorf("4 entries: %d read, %v", got, err)
		}
	}
}

// TestReadDumpValueBound: a value of MaxPageBytes is read, one byte
// longer is refused naming its line.
func TestReadDumpValueBound(t *testing.T) {
	t.Parallel()
	doc := serverJSON("a/b", "1", "")
	for _, c := range []struct {
		max int
		ok  bool
	}{{len(doc), true}, {len(doc) - 1, false}} {
		got := 0
		err := ReadDump(strings.NewReader("\n"+doc+"\n"), Limits{MaxPageBytes: c.max}, func([]byte) error { got++; return nil })
		if c.ok && (err != nil || got != 1) {
			t.Errorf("a value of %d bytes, at most %d: %d read, %v", len(doc), c.max, got, err)
		}
		if !c.ok && (!errors.Is(err, ErrPage) || !strings.Contains(err.Error(), fmt.Sprintf("line 2: a value of %d bytes, at most %d", len(doc), c.max))) {
			t.Errorf("a value of %d bytes, at most %d: %v", len(doc), c.max, err)
		}
	}
}

// TestRedact: a URL named in an error has its password hidden; text that
// is no URL is not printed.
func TestRedact(t *testing.T) {
	t.Parallel()
	if got := redact("https://user:secret@registry.example/v0.1/servers"); got != "https://user:xxxxx@registry.example/v0.1/servers" {
		t.Errorf("redact: %s", got)
	}
	if got := redact("https://registry.example/\x7f"); got != "(a URL)" {
		t.Errorf("redact of no URL: %s", got)
	}
}

// TestClientPageSize: the listing asks for PageSize entries a page, 100
// when it is not set.
func TestClientPageSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size int
		want string
	}{{0, "100"}, {-1, "100"}, {1, "1"}, {7, "7"}} {
		var got atomic.Value
		srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.URL.Query().Get("limit"))
			fmt.Fprint(w, `{"servers":[],"metadata":{}}`)
		})
		cl := Client{Base: srv.URL, HTTPClient: srv.Client(), PageSize: c.size}
		if err := cl.Each(context.Background(), func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if g, _ := got.Load().(string); g != c.want {
			t.Errorf("PageSize %d: limit=%s, want %s", c.size, g, c.want)
		}
	}
}
