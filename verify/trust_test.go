package verify

import (
	"context"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/trustroot"
)

// writeTrustedRoot writes the virtual Sigstore's logs, CAs and TSA as a
// trusted_root.json.
func (f *fixture) writeTrustedRoot(t *testing.T, dir string) string {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, f.vs.FulcioCertificateAuthorities(), f.vs.CTLogs(), f.vs.TimestampingAuthorities(), f.vs.RekorLogs())
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadTrust loads trust for each method from files and TUF, and checks
// that each refusal is its *TrustError with its cause.
func TestLoadTrust(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	trPath := f.writeTrustedRoot(t, dir)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pemOf := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	roots, inters := write("roots.pem", pemOf(f.pki.root.Raw)), write("inter.pem", pemOf(f.pki.inter.Raw))
	// An empty TUF cache, offline: TUF gives no root.
	offline := trustroot.Options{Offline: true, CacheDir: filepath.Join(dir, "tuf")}
	withPath := trustroot.Options{TrustedRootPath: trPath, Offline: true, CacheDir: filepath.Join(dir, "tuf")}
	sig := Policy{Method: MethodSigstore}
	key := Policy{Method: MethodKey}
	cert := Policy{Method: MethodCertificate}

	for _, tc := range []struct {
		name    string
		src     TrustSources
		p       Policy
		kind    error // the TrustError's Kind; nil: loads
		cause   error // optional, also in the chain
		sigstor bool  // a Sigstore root was loaded
		cas     bool  // enterprise CAs were loaded
	}{
		{name: "sigstore from a file", src: TrustSources{Root: withPath}, p: sig, sigstor: true},
		{name: "sigstore offline, nothing cached", src: TrustSources{Root: offline}, p: sig, kind: ErrNoTrustedRoot, cause: trustroot.ErrOffline},
		{name: "sigstore, missing file", src: TrustSources{Root: trustroot.Options{TrustedRootPath: filepath.Join(dir, "missing.json")}}, p: sig, kind: ErrTrustedRoot, cause: os.ErrNotExist},
		{name: "sigstore, not a trusted root", src: TrustSources{Root: trustroot.Options{TrustedRootPath: roots}}, p: sig, kind: ErrTrustedRoot},
		{name: "key needs nothing", src: TrustSources{Root: offline}, p: key},
		{name: "key with a file loads it", src: TrustSources{Root: withPath}, p: key, sigstor: true},
		{name: "key requiring a timestamp, offline", src: TrustSources{Root: offline}, p: Policy{Method: MethodKey, RequireTimestamp: true}, kind: ErrNoTrustedRoot, cause: trustroot.ErrOffline},
		{name: "key requiring a log entry, offline", src: TrustSources{Root: offline}, p: Policy{Method: MethodKey, RequireTlog: true}, kind: ErrNoTrustedRoot},
		{name: "key with CA roots", src: TrustSources{Root: offline, CARoots: roots}, p: key, kind: ErrCAsUnused},
		{name: "sigstore with CA intermediates", src: TrustSources{Root: withPath, CAIntermediates: inters}, p: sig, kind: ErrCAsUnused},
		{name: "certificate", src: TrustSources{Root: offline, CARoots: roots, CAIntermediates: inters}, p: cert, cas: true},
		{name: "certificate with a trusted root", src: TrustSources{Root: withPath, CARoots: roots}, p: Policy{Method: MethodCertificate, RequireTimestamp: true}, sigstor: true, cas: true},
		{name: "certificate without roots", src: TrustSources{Root: offline, CAIntermediates: inters}, p: cert, kind: ErrNoCARoots},
		{name: "certificate, intermediate as root", src: TrustSources{Root: offline, CARoots: inters}, p: cert, cas: true},
		{name: "certificate, missing roots", src: TrustSources{Root: offline, CARoots: filepath.Join(dir, "none.pem")}, p: cert, kind: ErrCARoots, cause: os.ErrNotExist},
		{name: "certificate requiring a log entry, offline", src: TrustSources{Root: offline, CARoots: roots}, p: Policy{Method: MethodCertificate, RequireTlog: true}, kind: ErrNoTrustedRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := LoadTrust(context.Background(), tc.src, tc.p)
			if tc.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				if (tr.Sigstore != nil) != tc.sigstor || (len(tr.CertificateAuthorities) > 0) != tc.cas {
					t.Fatalf("trust %+v", tr)
				}
				return
			}
			var te *TrustError
			if !errors.As(err, &te) || te.Kind != tc.kind || !errors.Is(err, tc.kind) {
				t.Fatalf("got %v, want a TrustError of %v", err, tc.kind)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("%v does not wrap %v", err, tc.cause)
			}
		})
	}
}

// TestLoadTrustVerifies verifies a certificate-signed bundle with a TSA
// timestamp against what LoadTrust loaded from the files.
func TestLoadTrustVerifies(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	roots := filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.pki.root.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	inters := filepath.Join(dir, "inter.pem")
	if err := os.WriteFile(inters, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.pki.inter.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Policy{Method: MethodCertificate, Identities: []Identity{{Email: "release@example.com"}}, RequireTimestamp: true}
	tr, err := LoadTrust(context.Background(), TrustSources{Root: trustroot.Options{TrustedRootPath: f.writeTrustedRoot(t, dir)}, CARoots: roots, CAIntermediates: inters}, p)
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, tr, p)
	res, err := v.Verify(context.Background(), certSigned(t, f.pki, f.vs, f.payload, certOpts{tsa: true}), f.snap)
	if err != nil || !res.Verified || res.Identity != "release@example.com" {
		t.Fatalf("%v %+v", err, res)
	}
}
