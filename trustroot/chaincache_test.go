package trustroot

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"sort"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// caCase is a certificate hierarchy, the leaves to verify against it, and
// what must hold at t0 for the first leaf (so that the table also pins the
// semantics, not only the equivalence).
type caCase struct {
	name  string
	build func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate)
	// accept: plain sigstore-go accepts leaves[0] at t0.
	accept bool
	// fast: the cached path itself (not the plain fallback) accepts
	// leaves[0] at t0.
	fast bool
}

func oneCA(r *testCert, inter ...*testCert) *root.FulcioCertificateAuthority {
	ca := &root.FulcioCertificateAuthority{Root: r.cert, URI: "https://fulcio.test"}
	for _, i := range inter {
		ca.Intermediates = append(ca.Intermediates, i.cert)
	}
	return ca
}

func caCases() []caCase {
	simple := func(mod func(r, i, l *certSpec)) func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
		return func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			rs, is, ls := rootSpec("root"), intermediateSpec("intermediate"), leafSpec("signer@example.com")
			if mod != nil {
				mod(&rs, &is, &ls)
			}
			r := issue(t, rs, nil)
			i := issue(t, is, r)
			l := issue(t, ls, i)
			return []*root.FulcioCertificateAuthority{oneCA(r, i)}, []*x509.Certificate{l.cert}
		}
	}
	return []caCase{
		{name: "valid chain", build: simple(nil), accept: true, fast: true},
		{name: "valid chain on P-384 (public-good curves)", build: simple(func(r, i, _ *certSpec) { publicGoodCurves(r, i) }), accept: true, fast: true},
		{name: "leaf without EKU", build: simple(func(_, _, l *certSpec) { l.eku = nil }), accept: true, fast: true},
		{name: "leaf serverAuth only", build: simple(func(_, _, l *certSpec) { l.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })},
		{name: "intermediate serverAuth only", build: simple(func(_, i, _ *certSpec) { i.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })},
		{name: "root serverAuth only", build: simple(func(r, _, _ *certSpec) { r.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })},
		{name: "root any EKU", build: simple(func(r, _, _ *certSpec) { r.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageAny} }), accept: true, fast: true},
		{name: "root unknown EKU only", build: simple(func(r, _, _ *certSpec) { r.unknownEKU = []asn1.ObjectIdentifier{{1, 2, 3, 4}} })},
		{name: "root expired before leaf", build: simple(func(r, _, _ *certSpec) { r.notAfter = t0.Add(-time.Hour) })},
		{name: "root not yet valid", build: simple(func(r, _, _ *certSpec) { r.notBefore = t0.Add(time.Hour) })},
		{name: "intermediate expired", build: simple(func(_, i, _ *certSpec) { i.notAfter = t0.Add(-time.Hour) })},
		// Valid at t0, expired before the leaf is: a leaf verified at t0 (and
		// remembered) must still be refused at a later time the
		// intermediate no longer covers.
		{name: "intermediate expires while the leaf is valid", build: simple(func(_, i, _ *certSpec) { i.notAfter = t0.Add(time.Minute) }), accept: true, fast: true},
		{name: "intermediate valid only after the leaf was issued", build: simple(func(_, i, _ *certSpec) { i.notBefore = t0.Add(-time.Minute) }), accept: true, fast: true},
		{name: "intermediate not a CA", build: simple(func(_, i, _ *certSpec) { i.ca = false })},
		{name: "intermediate without basic constraints", build: simple(func(_, i, _ *certSpec) { i.noBasic = true })},
		{name: "root path length zero", build: simple(func(r, _, _ *certSpec) { r.maxPathZero = true })},
		{name: "intermediate path length zero", build: simple(func(_, i, _ *certSpec) { i.maxPathZero = true }), accept: true, fast: true},
		{name: "root name constraints permit", build: simple(func(r, _, _ *certSpec) { r.permitEmail = []string{"example.com"} }), accept: true},
		{name: "root name constraints forbid", build: simple(func(r, _, _ *certSpec) { r.permitEmail = []string{"example.org"} })},
		{name: "intermediate name constraints permit", build: simple(func(_, i, _ *certSpec) { i.permitEmail = []string{"example.com"} }), accept: true, fast: true},
		{name: "intermediate name constraints forbid", build: simple(func(_, i, _ *certSpec) { i.permitEmail = []string{"example.org"} })},
		{name: "root unhandled critical extension", build: simple(func(r, _, _ *certSpec) { r.extra = criticalExt() })},
		{name: "intermediate unhandled critical extension", build: simple(func(_, i, _ *certSpec) { i.extra = criticalExt() })},
		{name: "leaf unhandled critical extension", build: simple(func(_, _, l *certSpec) { l.extra = criticalExt() })},
		{name: "intermediate requires explicit policy", build: simple(func(_, i, _ *certSpec) { i.extra = policyConstraints() })},
		{name: "leaf requires explicit policy", build: simple(func(_, _, l *certSpec) { l.extra = policyConstraints() })},
		{name: "leaf from an untrusted CA", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i := issue(t, intermediateSpec("intermediate"), r)
			or := issue(t, rootSpec("other root"), nil)
			oi := issue(t, intermediateSpec("other intermediate"), or)
			l := issue(t, leafSpec("signer@example.com"), oi)
			return []*root.FulcioCertificateAuthority{oneCA(r, i)}, []*x509.Certificate{l.cert}
		}},
		{name: "leaf from an impostor intermediate with the same name", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i := issue(t, intermediateSpec("intermediate"), r)
			or := issue(t, rootSpec("root"), nil) // same subject, other key
			oi := issue(t, intermediateSpec("intermediate"), or)
			l := issue(t, leafSpec("signer@example.com"), oi)
			good := issue(t, leafSpec("signer@example.com"), i)
			return []*root.FulcioCertificateAuthority{oneCA(r, i)}, []*x509.Certificate{l.cert, good.cert}
		}},
		{name: "trusted root lists an intermediate it did not sign", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			or := issue(t, rootSpec("root"), nil)
			oi := issue(t, intermediateSpec("intermediate"), or)
			l := issue(t, leafSpec("signer@example.com"), oi)
			return []*root.FulcioCertificateAuthority{oneCA(r, oi)}, []*x509.Certificate{l.cert}
		}},
		{name: "two intermediates with one name (re-keyed)", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i1 := issue(t, intermediateSpec("intermediate"), r)
			i2 := issue(t, intermediateSpec("intermediate"), r)
			l1 := issue(t, leafSpec("signer@example.com"), i1)
			l2 := issue(t, leafSpec("signer@example.com"), i2)
			return []*root.FulcioCertificateAuthority{oneCA(r, i1, i2)}, []*x509.Certificate{l1.cert, l2.cert}
		}, accept: true},
		{name: "two intermediates with two names", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i1 := issue(t, intermediateSpec("intermediate 1"), r)
			i2 := issue(t, intermediateSpec("intermediate 2"), r)
			l1 := issue(t, leafSpec("signer@example.com"), i1)
			l2 := issue(t, leafSpec("signer@example.com"), i2)
			return []*root.FulcioCertificateAuthority{oneCA(r, i1, i2)}, []*x509.Certificate{l1.cert, l2.cert}
		}, accept: true, fast: true},
		{name: "two levels of intermediates", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i1 := issue(t, intermediateSpec("intermediate 1"), r)
			i2 := issue(t, intermediateSpec("intermediate 2"), i1)
			l := issue(t, leafSpec("signer@example.com"), i2)
			l1 := issue(t, leafSpec("signer@example.com"), i1)
			return []*root.FulcioCertificateAuthority{oneCA(r, i2, i1)}, []*x509.Certificate{l.cert, l1.cert}
		}, accept: true},
		{name: "leaf directly under the root", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			i := issue(t, intermediateSpec("intermediate"), r)
			l := issue(t, leafSpec("signer@example.com"), r)
			return []*root.FulcioCertificateAuthority{oneCA(r, i)}, []*x509.Certificate{l.cert, i.cert, r.cert}
		}, accept: true},
		{name: "root only (public-good 2021 style)", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			r := issue(t, rootSpec("root"), nil)
			l := issue(t, leafSpec("signer@example.com"), r)
			return []*root.FulcioCertificateAuthority{oneCA(r)}, []*x509.Certificate{l.cert}
		}, accept: true},
		{name: "CA validity window ended", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			cas, leaves := simple(nil)(t)
			cas[0].ValidityPeriodStart = t0.Add(-years(1))
			cas[0].ValidityPeriodEnd = t0.Add(-time.Minute)
			return cas, leaves
		}},
		{name: "CA validity window contains t0", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			cas, leaves := simple(nil)(t)
			cas[0].ValidityPeriodStart = t0.Add(-time.Minute)
			cas[0].ValidityPeriodEnd = t0.Add(time.Minute)
			return cas, leaves
		}, accept: true, fast: true},
		{name: "second CA of two (public-good 2021 + 2022)", build: func(t *testing.T) ([]*root.FulcioCertificateAuthority, []*x509.Certificate) {
			old := issue(t, rootSpec("old root"), nil)
			oldLeaf := issue(t, leafSpec("signer@example.com"), old)
			cas, leaves := simple(nil)(t)
			first := oneCA(old)
			first.ValidityPeriodEnd = t0.Add(-years(1))
			return append([]*root.FulcioCertificateAuthority{first}, cas...), append(leaves, oldLeaf.cert)
		}, accept: true, fast: true},
	}
}

func criticalExt() []pkix.Extension {
	return []pkix.Extension{{Id: oidUnhandledCritical, Critical: true, Value: []byte{0x05, 0x00}}}
}

func policyConstraints() []pkix.Extension {
	return []pkix.Extension{{Id: oidPolicyConstraints, Critical: true, Value: policyConstraintsZero}}
}

// boundaryTimes returns t0 and every validity boundary of the certificates
// and authorities, one second either side.
func boundaryTimes(cas []*root.FulcioCertificateAuthority, leaves []*x509.Certificate) []time.Time {
	set := map[time.Time]bool{t0: true}
	add := func(ts ...time.Time) {
		for _, x := range ts {
			if x.IsZero() {
				continue
			}
			for _, d := range []time.Duration{-time.Second, 0, time.Second} {
				set[x.Add(d)] = true
			}
		}
	}
	for _, ca := range cas {
		add(ca.ValidityPeriodStart, ca.ValidityPeriodEnd, ca.Root.NotBefore, ca.Root.NotAfter)
		for _, c := range ca.Intermediates {
			add(c.NotBefore, c.NotAfter)
		}
	}
	for _, l := range leaves {
		add(l.NotBefore, l.NotAfter)
	}
	out := make([]time.Time, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

func sameChains(a, b [][]*x509.Certificate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if !bytes.Equal(a[i][j].Raw, b[i][j].Raw) {
				return false
			}
		}
	}
	return true
}

// TestChainCacheCertificateAuthorities drives sigstore-go's own leaf
// verification (verify.VerifyLeafCertificate) with the plain and the cached
// material, for every leaf of every case at every validity boundary: both
// must accept or reject alike and return the same chains.
func TestChainCacheCertificateAuthorities(t *testing.T) {
	t.Parallel() // shares nothing: its own roots, caches and certificates
	for _, tc := range caCases() {
		t.Run(tc.name, func(t *testing.T) {
			fcas, leaves := tc.build(t)
			var cas []root.CertificateAuthority
			for _, ca := range fcas {
				cas = append(cas, ca)
			}
			plain, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			cached := WithChainCache(plain)

			_, err = verify.VerifyLeafCertificate(t0, leaves[0], plain)
			if got := err == nil; got != tc.accept {
				t.Errorf("plain sigstore-go at t0: accepted=%v, want %v (%v)", got, tc.accept, err)
			}
			fast := false
			for _, ca := range cached.FulcioCertificateAuthorities() {
				if c, ok := ca.(*cachedCA); ok {
					if _, err := c.Verify(leaves[0], t0); err == nil {
						fast = true
					}
				}
			}
			if fast != tc.fast {
				t.Errorf("cached path accepts leaf at t0: %v, want %v", fast, tc.fast)
			}

			n, hits := 0, 0
			for _, leaf := range leaves {
				for _, at := range boundaryTimes(fcas, leaves) {
					pc, perr := verify.VerifyLeafCertificate(at, leaf, plain)
					cc, cerr := verify.VerifyLeafCertificate(at, leaf, cached)
					n++
					if (perr == nil) != (cerr == nil) {
						t.Errorf("leaf %s at %s: plain err=%v, cached err=%v", leaf.Subject, at.Format(time.RFC3339), perr, cerr)
						continue
					}
					if perr == nil {
						hits++
						if !sameChains(pc, cc) {
							t.Errorf("leaf %s at %s: chains differ", leaf.Subject, at.Format(time.RFC3339))
						}
					}
				}
			}
			t.Logf("%d verifications compared, %d accepted", n, hits)
		})
	}
}

// TestChainCacheReal: the public-good production root gets a cached path
// for its 2022 intermediate and its TSA; the 2021 root-only CA is left as is.
func TestChainCacheReal(t *testing.T) {
	tr := productionRoot(t)
	c := WithChainCache(tr)
	if WithChainCache(c) != c {
		t.Error("wrapping twice must return the same material")
	}
	var ncached, nplain int
	for _, ca := range c.FulcioCertificateAuthorities() {
		switch ca.(type) {
		case *cachedCA:
			ncached++
		case *root.FulcioCertificateAuthority:
			nplain++
		}
	}
	if ncached != 1 || nplain != 2 {
		t.Errorf("cached CAs %d (want 1), plain CAs %d (want 2)", ncached, nplain)
	}
	if len(c.TimestampingAuthorities()) != 1 {
		t.Fatalf("TSAs: %d", len(c.TimestampingAuthorities()))
	}
	if _, ok := c.TimestampingAuthorities()[0].(*cachedTSA); !ok {
		t.Errorf("the production TSA is not cached")
	}
	if len(c.RekorLogs()) != len(tr.RekorLogs()) || len(c.CTLogs()) != len(tr.CTLogs()) {
		t.Error("logs must be passed through")
	}
	if WithChainCache(nil) != nil {
		t.Error("WithChainCache(nil) must be nil")
	}
}
