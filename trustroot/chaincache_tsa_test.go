package trustroot

import (
	"bytes"
	"crypto"
	_ "crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"sort"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// tsaHierarchy is a timestamping authority for the tests: the trusted-root
// entry and the keys to sign responses with.
type tsaHierarchy struct {
	authority *root.SigstoreTimestampingAuthority
	signer    *testCert // signs responses
	embed     []*x509.Certificate
	noCerts   bool        // response without certificates
	hash      crypto.Hash // message imprint algorithm; default SHA-256
}

func tsaRootSpec() certSpec {
	s := rootSpec("tsa root")
	return s
}

func tsaIntermediateSpec() certSpec {
	s := intermediateSpec("tsa intermediate")
	s.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}
	return s
}

func tsaLeafSpec() certSpec {
	return certSpec{cn: "tsa", notBefore: t0.Add(-years(1)), notAfter: t0.Add(years(1)), criticalEKU: true}
}

// respond returns a timestamp response over signature, asserting time at.
func (h *tsaHierarchy) respond(t testing.TB, signature []byte, at time.Time) []byte {
	t.Helper()
	alg := h.hash
	if alg == 0 {
		alg = crypto.SHA256
	}
	hh := alg.New()
	hh.Write(signature)
	ts := timestamp.Timestamp{
		HashAlgorithm:     alg,
		HashedMessage:     hh.Sum(nil),
		Time:              at,
		Policy:            asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2},
		AddTSACertificate: !h.noCerts,
		Certificates:      h.embed,
	}
	resp, err := ts.CreateResponseWithOpts(h.signer.cert, h.signer.key, crypto.SHA384)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type tsaCase struct {
	name  string
	build func(t *testing.T) *tsaHierarchy
	// respond, when set, replaces h.respond (tampering).
	respond func(t *testing.T, h *tsaHierarchy, sig []byte, at time.Time) []byte
	accept  bool // plain accepts a response at t0
	fast    bool // the cached path itself accepts it
}

func tsaCases() []tsaCase {
	std := func(mod func(r, i, l *certSpec), withIntermediate bool, tweak func(t *testing.T, h *tsaHierarchy, r, i *testCert)) func(t *testing.T) *tsaHierarchy {
		return func(t *testing.T) *tsaHierarchy {
			rs, is, ls := tsaRootSpec(), tsaIntermediateSpec(), tsaLeafSpec()
			if mod != nil {
				mod(&rs, &is, &ls)
			}
			r := issue(t, rs, nil)
			parent := r
			var i *testCert
			if withIntermediate {
				i = issue(t, is, r)
				parent = i
			}
			l := issue(t, ls, parent)
			a := &root.SigstoreTimestampingAuthority{Root: r.cert, Leaf: l.cert, URI: "https://tsa.test"}
			if i != nil {
				a.Intermediates = []*x509.Certificate{i.cert}
			}
			h := &tsaHierarchy{authority: a, signer: l}
			if tweak != nil {
				tweak(t, h, r, i)
			}
			return h
		}
	}
	return []tsaCase{
		{name: "leaf under root (public-good style)", build: std(func(r, _, l *certSpec) { publicGoodCurves(r, l) }, false, nil), accept: true, fast: true},
		{name: "leaf under intermediate", build: std(nil, true, nil), accept: true, fast: true},
		{name: "response without certificates", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, _, _ *testCert) { h.noCerts = true }), accept: true, fast: true},
		{name: "response embedding the chain", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, r, i *testCert) {
			h.embed = []*x509.Certificate{i.cert, r.cert}
		}), accept: true, fast: true},
		{name: "leaf expired", build: std(func(_, _, l *certSpec) { l.notAfter = t0.Add(-time.Hour) }, true, nil)},
		{name: "intermediate expired", build: std(func(_, i, _ *certSpec) { i.notAfter = t0.Add(-time.Hour) }, true, nil)},
		{name: "root expired", build: std(func(r, _, _ *certSpec) { r.notAfter = t0.Add(-time.Hour) }, true, nil)},
		{name: "root not yet valid", build: std(func(r, _, _ *certSpec) { r.notBefore = t0.Add(time.Hour) }, false, nil)},
		{name: "intermediate code signing only", build: std(func(_, i, _ *certSpec) { i.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning} }, true, nil)},
		{name: "intermediate without EKU", build: std(func(_, i, _ *certSpec) { i.eku = nil }, true, nil), accept: true, fast: true},
		{name: "root serverAuth only", build: std(func(r, _, _ *certSpec) { r.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }, true, nil)},
		{name: "root path length zero", build: std(func(r, _, _ *certSpec) { r.maxPathZero = true }, true, nil)},
		{name: "intermediate requires explicit policy", build: std(func(_, i, _ *certSpec) { i.extra = policyConstraints() }, true, nil)},
		{name: "leaf EKU not critical", build: std(func(_, _, l *certSpec) {
			l.criticalEKU = false
			l.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}
		}, true, nil)},
		{name: "leaf is a CA", build: std(func(_, _, l *certSpec) { l.ca = true }, true, nil)},
		{name: "root name constraints", build: std(func(r, _, _ *certSpec) { r.permitEmail = []string{"example.com"} }, true, nil), accept: true, fast: true},
		{name: "authority window not started", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, _, _ *testCert) {
			h.authority.ValidityPeriodStart = t0.Add(time.Minute)
		})},
		{name: "authority window ended", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, _, _ *testCert) {
			h.authority.ValidityPeriodEnd = t0.Add(-time.Minute)
		})},
		{name: "authority without a leaf", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, _, _ *testCert) {
			h.authority.Leaf = nil
		}), accept: true},
		{name: "response by another leaf of the same intermediate", build: std(nil, true, func(t *testing.T, h *tsaHierarchy, _, i *testCert) {
			h.signer = issue(t, tsaLeafSpec(), i)
		})},
		{name: "response by an untrusted TSA", build: std(nil, true, func(t *testing.T, h *tsaHierarchy, _, _ *testCert) {
			or := issue(t, tsaRootSpec(), nil)
			h.signer = issue(t, tsaLeafSpec(), or)
		})},
		{name: "SHA-512 message imprint", build: std(nil, true, func(_ *testing.T, h *tsaHierarchy, _, _ *testCert) {
			h.hash = crypto.SHA512
		}), accept: true, fast: true},
		{name: "embedded impostor with the leaf's issuer and serial", build: std(nil, true, func(t *testing.T, h *tsaHierarchy, _, i *testCert) {
			spec := tsaLeafSpec()
			spec.serial = h.authority.Leaf.SerialNumber.Int64()
			h.signer = issue(t, spec, i)
		})},
		{name: "impostor's response without certificates", build: std(nil, true, func(t *testing.T, h *tsaHierarchy, _, i *testCert) {
			spec := tsaLeafSpec()
			spec.serial = h.authority.Leaf.SerialNumber.Int64()
			h.signer = issue(t, spec, i)
			h.noCerts = true
		})},
		{name: "response over another signature", build: std(nil, true, nil),
			respond: func(t *testing.T, h *tsaHierarchy, _ []byte, at time.Time) []byte {
				return h.respond(t, []byte("another signature"), at)
			}},
		{name: "response tampered", build: std(nil, true, nil),
			respond: func(t *testing.T, h *tsaHierarchy, sig []byte, at time.Time) []byte {
				r := h.respond(t, sig, at)
				// Flip a byte inside the signed TSTInfo (the generalized time).
				i := bytes.Index(r, []byte(at.UTC().Format("20060102150405")))
				if i < 0 {
					t.Fatal("time not found in response")
				}
				r[i+13] ^= 1
				return r
			}},
	}
}

// tsEntity is the smallest SignedEntity sigstore-go's timestamp
// verification needs.
type tsEntity struct {
	verify.BaseSignedEntity
	sig []byte
	tsr [][]byte
}

func (e *tsEntity) Timestamps() ([][]byte, error) { return e.tsr, nil }
func (e *tsEntity) SignatureContent() (verify.SignatureContent, error) {
	return sigContent(e.sig), nil
}

type sigContent []byte

func (s sigContent) Signature() []byte                                       { return s }
func (s sigContent) EnvelopeContent() verify.EnvelopeContent                 { return nil }
func (s sigContent) MessageSignatureContent() verify.MessageSignatureContent { return nil }

func tsaTimes(a *root.SigstoreTimestampingAuthority, signer *x509.Certificate) []time.Time {
	set := map[time.Time]bool{t0: true}
	add := func(ts ...time.Time) {
		for _, x := range ts {
			if !x.IsZero() {
				for _, d := range []time.Duration{-time.Second, 0, time.Second} {
					set[x.Add(d).Truncate(time.Second)] = true
				}
			}
		}
	}
	add(a.ValidityPeriodStart, a.ValidityPeriodEnd, a.Root.NotBefore, a.Root.NotAfter, signer.NotBefore, signer.NotAfter)
	if a.Leaf != nil {
		add(a.Leaf.NotBefore, a.Leaf.NotAfter)
	}
	for _, c := range a.Intermediates {
		add(c.NotBefore, c.NotAfter)
	}
	out := make([]time.Time, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// TestChainCacheTimestampingAuthorities drives sigstore-go's own timestamp
// verification (verify.VerifySignedTimestamp) with the plain and the cached
// material, with responses asserting every validity boundary.
func TestChainCacheTimestampingAuthorities(t *testing.T) {
	t.Parallel() // shares nothing: its own roots, caches and certificates
	sig := []byte("the signature being timestamped")
	for _, tc := range tsaCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.build(t)
			plain, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, []root.TimestampingAuthority{h.authority}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cached := WithChainCache(plain)
			respond := func(at time.Time) []byte {
				if tc.respond != nil {
					return tc.respond(t, h, sig, at)
				}
				return h.respond(t, sig, at)
			}

			r0 := respond(t0)
			ok, _, err := verify.VerifySignedTimestamp(&tsEntity{sig: sig, tsr: [][]byte{r0}}, plain)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ok) == 1; got != tc.accept {
				t.Errorf("plain sigstore-go at t0: accepted=%v, want %v", got, tc.accept)
			}
			fast := false
			if c, isCached := cached.TimestampingAuthorities()[0].(*cachedTSA); isCached {
				// The cached path proper, without the plain fallback.
				if ts, err := c.verifyCached(r0, sig); err == nil && ts.Time.Equal(t0) {
					fast = true
				}
			}
			if fast != tc.fast {
				t.Errorf("cached path accepts the response at t0: %v, want %v", fast, tc.fast)
			}

			hits := 0
			times := tsaTimes(h.authority, h.signer.cert)
			for _, at := range times {
				r := respond(at)
				e := &tsEntity{sig: sig, tsr: [][]byte{r}}
				pts, _, perr := verify.VerifySignedTimestamp(e, plain)
				cts, _, cerr := verify.VerifySignedTimestamp(e, cached)
				if (perr == nil) != (cerr == nil) || len(pts) != len(cts) {
					t.Errorf("at %s: plain %d timestamps (%v), cached %d (%v)", at.Format(time.RFC3339), len(pts), perr, len(cts), cerr)
					continue
				}
				for i := range pts {
					hits++
					if !pts[i].Time.Equal(cts[i].Time) || pts[i].URI != cts[i].URI {
						t.Errorf("at %s: plain %+v, cached %+v", at.Format(time.RFC3339), pts[i], cts[i])
					}
				}
			}
			t.Logf("%d responses compared, %d accepted", len(times), hits)
		})
	}
}
