package registry

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
)

// TestBindingRegistryBaseURL: a purl names a package of its type's public
// registry; an entry whose packages[].registryBaseUrl points elsewhere
// installs whatever that host serves under the name, which no statement
// binds.
func TestBindingRegistryBaseURL(t *testing.T) {
	t.Parallel()
	st := &attest.Statement{}
	st.Predicate.Server.Version = "1.0.0"
	st.Predicate.Package = []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}, {PURL: "pkg:pypi/acme-notes@1.0.0"}, {PURL: "pkg:nuget/Acme.Notes@1.0.0"}}
	for _, c := range []struct {
		name, pkg string
		ok        bool
	}{
		{"npm default", `{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm registry.npmjs.org", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm registry.npmjs.org/", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org/","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm another registry", `{"registryType":"npm","registryBaseUrl":"https://npm.evil.example","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"npm http", `{"registryType":"npm","registryBaseUrl":"http://registry.npmjs.org","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"npm lookalike", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org.evil.example","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"pypi pypi.org", `{"registryType":"pypi","registryBaseUrl":"https://pypi.org","identifier":"acme-notes","version":"1.0.0"}`, true},
		{"pypi another index", `{"registryType":"pypi","registryBaseUrl":"https://pypi.evil.example/simple","identifier":"acme-notes","version":"1.0.0"}`, false},
		{"nuget nuget.org", `{"registryType":"nuget","registryBaseUrl":"https://api.nuget.org","identifier":"Acme.Notes","version":"1.0.0"}`, true},
		{"nuget another feed", `{"registryType":"nuget","registryBaseUrl":"https://nuget.evil.example/v3/index.json","identifier":"Acme.Notes","version":"1.0.0"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(serverJSON("a/b", "1.0.0", `,"packages":[`+c.pkg+`]`)), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			err = CheckBinding(e, st)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			if err != nil && !errors.Is(err, ErrBinding) {
				t.Fatalf("not ErrBinding: %v", err)
			}
		})
	}
}

// TestVerifiedMemberSpoofed: a source's server.json that already holds
// the dump's _meta member twice, or in another case, would reach a
// verified dump beside the block mcpsign writes (WithVerified replaces
// one member), where a consumer that reads the first, or folds case,
// reads the source's. Such an entry does not verify.
func TestVerifiedMemberSpoofed(t *testing.T) {
	t.Parallel()
	ptr := `"` + PublisherProvided + `":{"` + AttestationMember + `":{"bundleUrl":"https://x/b","bundleDigest":"` + dg + `"}}`
	fake := `{"signers":[{"method":"sigstore","identity":"https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1"}]}`
	for _, c := range []struct {
		name, meta string
		ok, reads  bool
	}{
		{"one, replaced by the dump", `{` + ptr + `,"` + VerifiedMember + `":` + fake + `}`, true, true},
		// Refused as the entry is read (the strict reader: no repeated
		// member at any depth).
		{"twice", `{` + ptr + `,"` + VerifiedMember + `":` + fake + `,"` + VerifiedMember + `":` + fake + `}`, false, false},
		{"another case", `{` + ptr + `,"Dev.Mcpsign/Verified":` + fake + `}`, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(serverJSON("a/b", "1", `,"_meta":`+c.meta)), Limits{})
			if !c.reads {
				if !errors.Is(err, ErrEntry) {
					t.Fatalf("read: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (e.AttestationErr == nil) != c.ok {
				t.Fatalf("attestation err %v", e.AttestationErr)
			}
			if c.ok {
				out, err := WithVerified(e.Server, []byte(`{"real":1}`))
				if err != nil || bytes.Count(out, []byte(VerifiedMember)) != 1 || !bytes.Contains(out, []byte(`{"real":1}`)) {
					t.Fatalf("%s %v", out, err)
				}
			}
		})
	}
}

// keyPolicy is a policy whose namespace pattern a/* names one key (a
// fresh one: nothing verifies under it), so that entries get past the
// policy step to their bundles.
func keyPolicy(t *testing.T) *policy.File {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{"identities":[{"method":"key","key":"k.pem"}]}}}`), filepath.Join(dir, "p.json"))
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// TestFetchBudgetPerEntry: one entry lists up to 32 bundles; each is
// bounded in bytes and time, and so is the entry as a whole (a bundle is
// 5 to 11 KB), so that a hostile entry does not hold 32 times the bound
// of memory in each worker, or a worker for 32 times the timeout.
func TestFetchBudgetPerEntry(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("x"), 900)
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		i, _ := strconv.Atoi(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			// Slow, each just within its bound: the attack is the delay.
			select {
			case <-time.After(400 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		w.Write(append(bytes.Clone(body), byte(i)))
	}))
	defer srv.Close()
	pf := keyPolicy(t)
	for _, c := range []struct {
		name string
		path string
		opts Options
	}{
		// 32 bundles of 900 bytes, each under the 1,000-byte bound.
		{"bytes", "/big/", Options{MaxBundleBytes: 1000}},
		// 32 bundles of 400 ms each, each under the 500 ms bound.
		{"time", "/slow/", Options{FetchTimeout: 500 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			requests.Store(0)
			var ptrs []string
			for i := range 32 {
				// The registry gives the digests of what it serves.
				b := append(bytes.Clone(body), byte(i))
				ptrs = append(ptrs, `{"bundleUrl":"`+srv.URL+c.path+strconv.Itoa(i)+`","bundleDigest":"`+PointerDigest(b)+`"}`)
			}
			raw := serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":[`+strings.Join(ptrs, ",")+`]}}`)
			c.opts.Policy, c.opts.HTTPClient, c.opts.BundleAddresses = pf, srv.Client(), source.LoopbackAddresses
			v, err := New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := v.VerifyEntry(context.Background(), []byte(raw))
			if r.Verified || r.Step != StepFetch {
				t.Fatalf("want a failure at fetch: %+v", r)
			}
			// Two: the first, and the second that the budget cuts off. A
			// third only when the budget's timer fired late, after the
			// second's answer, as it can on a loaded machine: at least 300
			// ms late, since each answer takes 400. Without the entry's
			// budget all 32 are fetched. TestFetchDeadlineShared checks the
			// one deadline itself, without timing.
			if n := requests.Load(); n > 3 {
				t.Errorf("%d bundles fetched for one entry after %s; its budget is one bundle's bound", n, time.Since(start).Round(time.Millisecond))
			}
		})
	}
}

// TestBindingUnbound: what an entry makes a host fetch or reach that no
// statement member binds fails closed: a hostile registry keeps the
// publisher's bundle and version and adds a remote URL, or a runtime
// argument that makes npx install another package.
func TestBindingUnbound(t *testing.T) {
	t.Parallel()
	st := &attest.Statement{}
	st.Predicate.Server.Version = "1.0.0"
	st.Predicate.Package = []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}}
	pkg := `{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0"`
	for _, c := range []struct {
		name, extra string
		ok          bool
	}{
		{"the package alone", `,"packages":[` + pkg + `}]`, true},
		{"empty runtime arguments", `,"packages":[` + pkg + `,"runtimeArguments":[]}]`, true},
		{"empty remotes", `,"packages":[` + pkg + `}],"remotes":[]`, true},
		{"a remote beside the package", `,"packages":[` + pkg + `}],"remotes":[{"type":"streamable-http","url":"https://evil.example/mcp"}]`, false},
		{"a remote alone", `,"remotes":[{"type":"streamable-http","url":"https://evil.example/mcp"}]`, false},
		{"npx --package", `,"packages":[` + pkg + `,"runtimeArguments":[{"type":"named","name":"--package","value":"evil@1"}]}]`, false},
		{"a case variant of remotes", `,"packages":[` + pkg + `}],"Remotes":[{"url":"https://evil.example/mcp"}]`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(serverJSON("a/b", "1.0.0", c.extra)), Limits{})
			if err != nil {
				if c.ok {
					t.Fatal(err)
				}
				return // refused as it reads
			}
			err = CheckBinding(e, st)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			if err != nil && !errors.Is(err, ErrBinding) {
				t.Fatalf("not ErrBinding: %v", err)
			}
		})
	}
}

// TestBundleAddressGuard: an entry is untrusted, and its bundle URL may
// name an address on the verifier's machine or network (a server-side
// request forgery from a mirror's ingestion job). By default the fetch
// connects to public addresses only, checked as the connection is made
// (the name "localhost" is refused as 127.0.0.1 is); a registry on a
// loopback host allows loopback; allowPrivate allows all.
func TestBundleAddressGuard(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte("not a bundle"))
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	digest := PointerDigest([]byte("not a bundle"))
	pf := keyPolicy(t)
	for _, c := range []struct {
		name, url string
		addrs     source.AddressScope
		refused   bool
	}{
		{"loopback IP, public only", srv.URL + "/b", source.PublicAddresses, true},
		{"localhost, public only", "https://localhost:" + port + "/b", source.PublicAddresses, true},
		{"loopback IP, loopback allowed", srv.URL + "/b", source.LoopbackAddresses, false},
		{"loopback IP, every address", srv.URL + "/b", source.AnyAddress, false},
		{"link-local metadata service, loopback allowed", "https://169.254.169.254/latest/meta-data/", source.LoopbackAddresses, true},
		{"private address, loopback allowed", "https://10.0.0.5/b", source.LoopbackAddresses, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := New(Options{Policy: pf, HTTPClient: srv.Client(), BundleAddresses: c.addrs, FetchTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			before := requests.Load()
			r := v.VerifyEntry(context.Background(), []byte(serverJSON("a/b", "1", pointerMeta(c.url, digest))))
			refused := errors.Is(r.Err(), source.ErrAddressRefused)
			if r.Verified || refused != c.refused || (c.refused && (r.Step != StepFetch || requests.Load() != before)) {
				t.Fatalf("refused %v, want %v: %+v (%d requests)", refused, c.refused, r, requests.Load()-before)
			}
		})
	}
}
