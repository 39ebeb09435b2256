package trustroot

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// WithChainCache returns trusted material that accepts and rejects exactly
// what tm does, but does the constant part of certificate path validation
// once per trusted root instead of on every verification.
//
// sigstore-go's root.FulcioCertificateAuthority and
// root.SigstoreTimestampingAuthority rebuild and re-verify the whole chain
// (leaf → intermediate → root) on every call; for the public-good instance
// that is one P-384 signature per chain per call that never changes. The
// cached material keeps, per trusted root, computed on first use:
//
//   - for every Fulcio (or PKI) intermediate whose only possible issuer is
//     the CA's root: the result of checking the intermediate's signature
//     under the root, and the static properties of the root (no name
//     constraints, key usage allowing code signing, path length). A leaf
//     issued by such an intermediate is verified with crypto/x509 against
//     the intermediate as trust anchor (leaf signature, leaf and
//     intermediate validity at the verified time, key usage, name
//     constraints, policies), and the root's validity at the same time is
//     checked, on every call;
//   - for every timestamping authority with a signing certificate: the
//     chains from it to its root as crypto/x509 built them, and the static
//     checks of the signing certificate. Every timestamp response is still
//     parsed, its hash algorithm, its signature (once: the
//     timestamp-authority library checks it twice), its signer and its
//     hashed message checked, and every certificate of the cached chain must
//     be valid at the time the response asserts.
//
// Nothing is skipped: what changes per bundle (the leaf and its signature,
// the timestamp response, the times) is checked for every bundle (a leaf's
// signature once per verification, though sigstore-go asks once per
// verified time: leafMemo), and any case
// the cache cannot prove equivalent (ambiguous issuers, name or policy
// constraints on the cached part, several intermediates with one subject, a
// failure of the fast path) is handed to the plain sigstore-go
// implementation, whose result is returned unchanged.
//
// The authorities of tm are read once, when WithChainCache is called; a
// material that changes later (root.LiveTrustedRoot) must be wrapped again.
// FulcioCertificateAuthorities lists each cached authority followed by the
// plain one it stands for, so that sigstore-go can still add the
// intermediates a bundle carries to the plain one: use the returned material
// to verify, and tm to describe. WithChainCache of a cached material returns
// it unchanged. The material is safe for concurrent use.
//
// One difference remains by design: when a bundle carries its own
// intermediate certificates (or a timestamp response embeds certificates),
// crypto/x509 gives up after 100 signature checks; the cache, which does not
// look at certificates the trusted root does not list, does not.
func WithChainCache(tm root.TrustedMaterial) root.TrustedMaterial {
	if tm == nil {
		return nil
	}
	if c, ok := tm.(*cachedMaterial); ok {
		return c
	}
	c := &cachedMaterial{TrustedMaterial: tm}
	for _, ca := range tm.FulcioCertificateAuthorities() {
		if f, ok := ca.(*root.FulcioCertificateAuthority); ok {
			if fast := newCachedCA(f); fast != nil {
				c.cas = append(c.cas, fast)
			}
		}
		c.cas = append(c.cas, ca)
	}
	for _, tsa := range tm.TimestampingAuthorities() {
		if s, ok := tsa.(*root.SigstoreTimestampingAuthority); ok {
			if fast := newCachedTSA(s); fast != nil {
				c.tsas = append(c.tsas, fast)
				continue
			}
		}
		c.tsas = append(c.tsas, tsa)
	}
	return c
}

// cachedMaterial is tm with its certificate and timestamping authorities
// replaced by cached ones; logs and public keys are tm's.
type cachedMaterial struct {
	root.TrustedMaterial
	cas  []root.CertificateAuthority
	tsas []root.TimestampingAuthority
}

func (c *cachedMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority {
	return c.cas
}

func (c *cachedMaterial) TimestampingAuthorities() []root.TimestampingAuthority {
	return c.tsas
}

// errNotCached tells sigstore-go to go on to the next authority: the plain
// one that follows every cached CA.
var errNotCached = errors.New("chain cache: not applicable, deferring to the plain certificate authority")

var (
	oidNameConstraints   = asn1.ObjectIdentifier{2, 5, 29, 30}
	oidPolicyMappings    = asn1.ObjectIdentifier{2, 5, 29, 33}
	oidPolicyConstraints = asn1.ObjectIdentifier{2, 5, 29, 36}
	oidInhibitAnyPolicy  = asn1.ObjectIdentifier{2, 5, 29, 54}
	oidExtKeyUsage       = asn1.ObjectIdentifier{2, 5, 29, 37}
)

func hasExtension(c *x509.Certificate, oids ...asn1.ObjectIdentifier) bool {
	for _, e := range c.Extensions {
		for _, oid := range oids {
			if e.Id.Equal(oid) {
				return true
			}
		}
	}
	return false
}

// ekuAllows mirrors crypto/x509's checkChainForKeyUsage for one certificate
// and one requested usage.
func ekuAllows(c *x509.Certificate, usage x509.ExtKeyUsage) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageAny || u == usage {
			return true
		}
	}
	return false
}

func validAt(c *x509.Certificate, t time.Time) bool {
	return !t.Before(c.NotBefore) && !t.After(c.NotAfter)
}

// cachedCA verifies leaves issued by an intermediate of one
// FulcioCertificateAuthority whose path to the root was checked once.
type cachedCA struct {
	ca *root.FulcioCertificateAuthority
	// byIssuer maps the raw subject of an eligible intermediate to it.
	byIssuer map[string]*cachedPath
	// leaves remembers the leaves whose path verified lately.
	leaves leafMemo
}

type cachedPath struct {
	intermediate *x509.Certificate
	root         *x509.Certificate
	anchor       *x509.CertPool // holds only intermediate

	once   sync.Once
	signed bool // the intermediate's signature under the root verifies
}

// leafMemoSize bounds leafMemo: sigstore-go validates one leaf once per
// verified time, the calls of one verification in a row, so a few entries
// per concurrent verification are all that is ever hit.
const leafMemoSize = 16

// leafMemo remembers the last leafMemoSize leaf certificates (the parsed
// objects sigstore-go passes, held so that none is reused) that
// crypto/x509 verified under the CA's cached path (the leaf's issuer
// names it). For the same certificate and the same anchor, crypto/x509's
// verdict depends on the time only through the validity periods of the
// leaf and the intermediate (the signature, key usage, constraints and
// extensions do not change), so a remembered
// leaf at another time needs only those two checks: the second path
// validation of one verification (sigstore-go makes one per verified
// time, the log's and each timestamp's, with the certificate it parsed
// for that verification) costs no second leaf signature check. A new
// verification parses its certificate anew and checks it in full. Only
// successes are remembered.
type leafMemo struct {
	mu     sync.Mutex
	leaves [leafMemoSize]*x509.Certificate
	next   int
}

func (m *leafMemo) has(leaf *x509.Certificate) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.leaves[:], leaf)
}

func (m *leafMemo) add(leaf *x509.Certificate) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaves[m.next] = leaf
	m.next = (m.next + 1) % leafMemoSize
}

// verified checks, once, the one signature the cache saves on every later
// call: the intermediate's under the root. Done on first use, so that a
// process verifying one bundle pays no more than without the cache.
func (p *cachedPath) verified() bool {
	p.once.Do(func() { p.signed = p.intermediate.CheckSignatureFrom(p.root) == nil })
	return p.signed
}

// newCachedCA returns nil when no intermediate of ca qualifies.
func newCachedCA(ca *root.FulcioCertificateAuthority) *cachedCA {
	r := ca.Root
	if r == nil || len(ca.Intermediates) == 0 || len(r.Raw) == 0 || r.PublicKey == nil {
		return nil
	}
	// What crypto/x509 checks of the root as the last certificate of
	// [leaf, intermediate, root], independent of the leaf and the time.
	if len(r.UnhandledCriticalExtensions) > 0 ||
		(r.BasicConstraintsValid && r.MaxPathLen >= 0 && r.MaxPathLen < 1) ||
		hasExtension(r, oidNameConstraints) ||
		!ekuAllows(r, x509.ExtKeyUsageCodeSigning) {
		return nil
	}
	// Chain building looks parents up by subject: a subject shared by two
	// certificates makes the path ambiguous, so it is left to the plain CA.
	subjects := map[string]int{string(r.RawSubject): 1}
	for _, c := range ca.Intermediates {
		if c == nil {
			return nil
		}
		subjects[string(c.RawSubject)]++
	}
	if subjects[string(r.RawSubject)] != 1 {
		return nil
	}
	f := &cachedCA{ca: ca, byIssuer: map[string]*cachedPath{}}
	for _, in := range ca.Intermediates {
		if subjects[string(in.RawSubject)] != 1 ||
			!bytes.Equal(in.RawIssuer, r.RawSubject) ||
			bytes.Equal(in.RawSubject, r.RawSubject) ||
			len(in.Raw) == 0 || in.PublicKey == nil ||
			!in.BasicConstraintsValid || !in.IsCA ||
			hasExtension(in, oidPolicyMappings, oidPolicyConstraints, oidInhibitAnyPolicy) {
			continue
		}
		pool := x509.NewCertPool()
		pool.AddCert(in)
		f.byIssuer[string(in.RawSubject)] = &cachedPath{intermediate: in, root: r, anchor: pool}
	}
	if len(f.byIssuer) == 0 {
		return nil
	}
	return f
}

// Verify verifies leaf at observerTimestamp as f.ca.Verify would, or
// returns errNotCached so that sigstore-go goes on to f.ca itself.
func (f *cachedCA) Verify(leaf *x509.Certificate, observerTimestamp time.Time) ([][]*x509.Certificate, error) {
	ca := f.ca
	if leaf == nil || len(leaf.Raw) == 0 {
		return nil, errNotCached
	}
	if !ca.ValidityPeriodStart.IsZero() && observerTimestamp.Before(ca.ValidityPeriodStart) {
		return nil, errNotCached
	}
	if !ca.ValidityPeriodEnd.IsZero() && observerTimestamp.After(ca.ValidityPeriodEnd) {
		return nil, errNotCached
	}
	p := f.byIssuer[string(leaf.RawIssuer)]
	if p == nil || !p.verified() {
		return nil, errNotCached
	}
	r := ca.Root
	// The root must not look like the leaf (crypto/x509's loop check), the
	// leaf must not carry policy constraints (they would make the policy
	// check depend on the intermediate), and the root must be valid at
	// the verified time like every certificate of the path.
	if bytes.Equal(leaf.RawSubject, r.RawSubject) ||
		hasExtension(leaf, oidPolicyConstraints) ||
		!validAt(r, observerTimestamp) {
		return nil, errNotCached
	}
	if f.leaves.has(leaf) {
		// Verified before under this path: only the times can differ
		// (leafMemo); crypto/x509 returns the leaf it was given first.
		if !validAt(leaf, observerTimestamp) || !validAt(p.intermediate, observerTimestamp) {
			return nil, errNotCached
		}
		return [][]*x509.Certificate{{leaf, p.intermediate, r}}, nil
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		CurrentTime: observerTimestamp,
		Roots:       p.anchor,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	})
	if err != nil || len(chains) != 1 || len(chains[0]) != 2 || chains[0][1] != p.intermediate {
		return nil, errNotCached
	}
	f.leaves.add(leaf)
	return [][]*x509.Certificate{{chains[0][0], p.intermediate, r}}, nil
}

// cachedTSA verifies timestamp responses signed by the leaf of one
// SigstoreTimestampingAuthority whose chain is built once, on first use.
type cachedTSA struct {
	tsa *root.SigstoreTimestampingAuthority
	// leafOK: the static checks the timestamp-authority library makes of
	// the signing certificate on every response hold for tsa.Leaf.
	leafOK bool

	once   sync.Once
	chains [][]*x509.Certificate
}

// newCachedTSA returns nil when tsa has no leaf certificate to anchor on.
func newCachedTSA(tsa *root.SigstoreTimestampingAuthority) *cachedTSA {
	if tsa.Root == nil || tsa.Leaf == nil || len(tsa.Leaf.Raw) == 0 {
		return nil
	}
	return &cachedTSA{tsa: tsa, leafOK: tsaLeafOK(tsa.Leaf)}
}

// tsaLeafOK mirrors the checks of the signing certificate alone in the
// timestamp-authority library's verifyLeafCert (v2.1.3): an end-entity
// certificate whose extended key usage extension is critical and holds
// exactly one usage, time stamping.
func tsaLeafOK(c *x509.Certificate) bool {
	if c.IsCA || len(c.ExtKeyUsage)+len(c.UnknownExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageTimeStamping {
		return false
	}
	for _, e := range c.Extensions {
		if e.Id.Equal(oidExtKeyUsage) {
			return e.Critical
		}
	}
	return false
}

// verifiedChains returns the chains from the leaf to the root that
// crypto/x509 builds, and that pass the timestamp-authority library's check
// of the intermediates' extended key usage; none when the chain does not
// verify at a time when all of its certificates are valid. Only the time
// checks would differ at another time, and they are redone on every call.
func (f *cachedTSA) verifiedChains() [][]*x509.Certificate {
	f.once.Do(func() {
		tsa := f.tsa
		t := tsa.Leaf.NotBefore
		for _, c := range append([]*x509.Certificate{tsa.Root}, tsa.Intermediates...) {
			if c == nil || len(c.Raw) == 0 {
				return
			}
			if c.NotBefore.After(t) {
				t = c.NotBefore
			}
		}
		roots := x509.NewCertPool()
		roots.AddCert(tsa.Root)
		inter := x509.NewCertPool()
		for _, c := range tsa.Intermediates {
			inter.AddCert(c)
		}
		chains, err := tsa.Leaf.Verify(x509.VerifyOptions{
			CurrentTime:   t,
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping},
		})
		if err != nil {
			return
		}
		for _, chain := range chains {
			good := true
			for i := 1; i < len(chain)-1; i++ {
				if !intermediateAllowsTimestamping(chain[i]) {
					good = false
					break
				}
			}
			if good {
				f.chains = append(f.chains, chain)
			}
		}
	})
	return f.chains
}

// intermediateAllowsTimestamping mirrors the timestamp-authority library's
// verifyIntermediateExtendedKeyUsage.
func intermediateAllowsTimestamping(c *x509.Certificate) bool {
	if len(c.ExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageTimeStamping || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// Verify verifies a timestamp response as f.tsa.Verify would; whenever the
// cached path does not apply it returns f.tsa.Verify's own result.
func (f *cachedTSA) Verify(signedTimestamp []byte, signatureBytes []byte) (*root.Timestamp, error) {
	if ts, err := f.verifyCached(signedTimestamp, signatureBytes); err == nil {
		return ts, nil
	}
	return f.tsa.Verify(signedTimestamp, signatureBytes)
}

// verifyCached is the cached path alone: it accepts only what f.tsa.Verify
// accepts, and may refuse what f.tsa.Verify would accept. It makes every
// check of the timestamp-authority library's VerifyTimestampResponse
// (v2.1.3), with the same library functions where they are exported, except
// that the response's signature is checked once, where the library checks
// it twice (in timestamp.ParseResponse, then again on a second parse of the
// same token), and that the signing certificate's chain is the cached one.
func (f *cachedTSA) verifyCached(signedTimestamp []byte, signatureBytes []byte) (*root.Timestamp, error) {
	tsa, leaf := f.tsa, f.tsa.Leaf
	if !f.leafOK {
		return nil, errNotCached
	}
	// Parse; ParseResponse checks the token's signature when the token
	// carries certificates.
	ts, err := timestamp.ParseResponse(signedTimestamp)
	if err != nil {
		return nil, err
	}
	switch ts.HashAlgorithm {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default: // SHA-1 is refused as weak, anything else as unsupported
		return nil, errNotCached
	}
	p7, err := pkcs7.Parse(ts.RawToken)
	if err != nil {
		return nil, err
	}
	switch {
	case p7.Certificates == nil:
		// No certificate in the token: the signature is checked against
		// the trusted signing certificate, as the library does.
		p7.Certificates = []*x509.Certificate{leaf}
		if err := p7.Verify(); err != nil {
			return nil, err
		}
	case len(p7.Certificates) == 0:
		return nil, errNotCached
	}
	// The signer must be the trusted signing certificate itself (then the
	// ESS certificate id matches too).
	if signer := p7.GetOnlySigner(); signer == nil || !leaf.Equal(signer) {
		return nil, errNotCached
	}
	// The signed message is the signature being timestamped.
	h := ts.HashAlgorithm.New()
	h.Write(signatureBytes)
	if !bytes.Equal(h.Sum(nil), ts.HashedMessage) {
		return nil, errNotCached
	}
	if !tsa.ValidityPeriodStart.IsZero() && ts.Time.Before(tsa.ValidityPeriodStart) ||
		!tsa.ValidityPeriodEnd.IsZero() && ts.Time.After(tsa.ValidityPeriodEnd) {
		return nil, errNotCached
	}
	// The path: every certificate, the signing one included, valid at the
	// asserted time.
	for _, chain := range f.verifiedChains() {
		valid := true
		for _, c := range chain {
			if !validAt(c, ts.Time) {
				valid = false
				break
			}
		}
		if valid {
			return &root.Timestamp{Time: ts.Time, URI: tsa.URI}, nil
		}
	}
	return nil, errNotCached
}
