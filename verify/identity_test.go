package verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
)

// constrainedSub is a sub-CA of p's root limited, critically, to
// dept.example.com names (DNS, e-mail and URI).
func (p *testPKI) constrainedSub(t testing.TB) *testPKI {
	t.Helper()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: testpki.Serial(t), Subject: pkix.Name{CommonName: "Dept Signing CA", Organization: []string{"Example Corp"}},
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{"dept.example.com"},
		PermittedEmailAddresses:     []string{"dept.example.com"},
		PermittedURIDomains:         []string{"dept.example.com"},
	}
	sub := &testPKI{root: p.root, rootKey: p.rootKey, interKey: p.interKey}
	der, err := x509.CreateCertificate(nil, tmpl, p.root, p.interKey.Public(), p.rootKey)
	if err != nil {
		t.Fatal(err)
	}
	if sub.inter, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	return sub
}

// rawSubject is a DER Name of UTF8String attributes: each set is an RDN
// of (type, value) pairs, the first set the most significant.
func rawSubject(t testing.TB, sets ...[][2]string) []byte {
	t.Helper()
	oids := map[string]asn1.ObjectIdentifier{"CN": {2, 5, 4, 3}, "O": {2, 5, 4, 10}, "OU": {2, 5, 4, 11}}
	var seq pkix.RDNSequence
	for _, set := range sets {
		var rdn pkix.RelativeDistinguishedNameSET
		for _, a := range set {
			rdn = append(rdn, pkix.AttributeTypeAndValue{Type: oids[a[0]],
				Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte(a[1])}})
		}
		seq = append(seq, rdn)
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// sanExt is a SAN extension of the given GeneralNames, written as given
// (Go's x509 would lower-case a URI's scheme).
func sanExt(t testing.TB, names ...asn1.RawValue) pkix.Extension {
	t.Helper()
	der, err := asn1.Marshal(names)
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: cryptoutils.SANOID, Value: der}
}

func gn(tag int, v string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: []byte(v)}
}

func otherNameOnly(t testing.TB, v string) func(*x509.Certificate) {
	return func(c *x509.Certificate) {
		ext, err := cryptoutils.MarshalOtherNameSAN(v, true)
		if err != nil {
			t.Fatal(err)
		}
		c.EmailAddresses = nil
		c.ExtraExtensions = append(c.ExtraExtensions, *ext)
	}
}

// TestIdentity: identities matched on the certificate's
// own encoding, each criterion against the SAN type it names.
func TestIdentity(t *testing.T) {
	f := newFixture(t)
	dept := f.pki.constrainedSub(t)
	const goForm = "CN=MCP Release Signing,O=Example Corp"
	build := func(pki *testPKI, id Identity, leaf func(*x509.Certificate)) func(t *testing.T) (*Verifier, []byte, *digest.Snapshot) {
		return func(t *testing.T) (*Verifier, []byte, *digest.Snapshot) {
			v := mustVerifier(t, Trust{Sigstore: f.vs, CertificateAuthorities: pki.authorities(t)}, Policy{Method: MethodCertificate, Identities: []Identity{id}})
			return v, certSigned(t, pki, f.vs, f.payload, certOpts{tsa: true, leaf: leaf}), f.snap
		}
	}
	identity := func(want string) func(t *testing.T, res *Result) {
		return func(t *testing.T, res *Result) {
			t.Helper()
			if res.Identity != want {
				t.Errorf("identity %q, want %q", res.Identity, want)
			}
			if res.Verified && res.Certificate.SubjectAlternativeName != want && res.Identity != res.Subject {
				t.Errorf("summary SAN %q, want %q", res.Certificate.SubjectAlternativeName, want)
			}
			if rep := NewReport(res, nil); rep.Identity != want {
				t.Errorf("report identity %q", rep.Identity)
			}
		}
	}
	subject := func(sets ...[][2]string) func(*x509.Certificate) {
		return func(c *x509.Certificate) { c.RawSubject = rawSubject(t, sets...) }
	}
	emails := func(e ...string) func(*x509.Certificate) {
		return func(c *x509.Certificate) { c.EmailAddresses = e }
	}
	dnsOnly := func(d ...string) func(*x509.Certificate) {
		return func(c *x509.Certificate) { c.EmailAddresses, c.DNSNames = nil, d }
	}
	uriSAN := func(u string) func(*x509.Certificate) {
		return func(c *x509.Certificate) {
			c.EmailAddresses = nil
			c.ExtraExtensions = append(c.ExtraExtensions, sanExt(t, gn(6, u)))
		}
	}
	issuers := func(v1, v8 string) func(*x509.Certificate) {
		return func(c *x509.Certificate) {
			c.ExtraExtensions = append(c.ExtraExtensions, pkix.Extension{Id: certificate.OIDIssuer, Value: []byte(v1)},
				fulcioExt(t, certificate.OIDIssuerV2, v8))
		}
	}
	o, cn := [][2]string{{"O", "Example Corp"}}, [][2]string{{"CN", "MCP Release Signing"}}
	runStepCases(t, []stepCase{
		// 1. Name constraints: the e-mail SAN is refused by the chain, the
		// otherName (which crypto/x509 does not constrain) by the identity.
		{name: "constrained CA, e-mail inside", build: build(dept, Identity{Email: "release@dept.example.com"}, emails("release@dept.example.com")),
			check: identity("release@dept.example.com")},
		{name: "constrained CA, e-mail outside", step: StepChain, build: build(dept, Identity{Email: "release@example.com"}, nil)},
		{name: "constrained CA, otherName-only leaf, identity", step: StepIdentity, is: ErrIdentityMismatch, substr: "not an identity for the certificate method",
			build: build(dept, Identity{SAN: "release@example.com"}, otherNameOnly(t, "release@example.com"))},
		{name: "constrained CA, otherName-only leaf, identity regexp", step: StepIdentity, is: ErrIdentityMismatch, substr: "otherName",
			build: build(dept, Identity{SANRegexp: `.*@example\.com`}, otherNameOnly(t, "release@example.com"))},
		{name: "otherName-only leaf, e-mail", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Email: "release@example.com"}, otherNameOnly(t, "release@example.com"))},
		{name: "otherName-only leaf, subject only", build: build(f.pki, Identity{Subject: goForm}, otherNameOnly(t, "release@example.com")),
			check: identity(goForm)},

		// 2. Subjects compared in openssl's RFC 2253 form of the DER.
		{name: "duplicate CN, Go's form", step: StepIdentity, is: ErrIdentityMismatch, substr: "CN=MCP Release Signing,CN=Mallory,O=Example Corp",
			build: build(f.pki, Identity{Subject: goForm}, subject(o, [][2]string{{"CN", "Mallory"}}, cn))},
		{name: "duplicate CN, openssl's form", build: build(f.pki, Identity{Subject: "CN=MCP Release Signing,CN=Mallory,O=Example Corp"}, subject(o, [][2]string{{"CN", "Mallory"}}, cn))},
		{name: "reversed RDNs, the reversed-back form", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Subject: goForm}, subject(cn, o))},
		{name: "reversed RDNs, openssl's form", build: build(f.pki, Identity{Subject: "O=Example Corp,CN=MCP Release Signing"}, subject(cn, o)),
			check: func(t *testing.T, res *Result) {
				if res.Subject != "O=Example Corp,CN=MCP Release Signing" {
					t.Errorf("subject %q", res.Subject)
				}
			}},
		{name: "multi-valued RDN, flattened", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Subject: "CN=MCP Release Signing,OU=Release,O=Example Corp"}, subject(o, [][2]string{{"CN", "MCP Release Signing"}, {"OU", "Release"}}))},
		{name: "multi-valued RDN, other order", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Subject: "OU=Release+CN=MCP Release Signing,O=Example Corp"}, subject(o, [][2]string{{"CN", "MCP Release Signing"}, {"OU", "Release"}}))},
		{name: "multi-valued RDN, openssl's form", build: build(f.pki, Identity{Subject: "CN=MCP Release Signing+OU=Release,O=Example Corp"}, subject(o, [][2]string{{"CN", "MCP Release Signing"}, {"OU", "Release"}}))},
		{name: "escaped comma", build: build(f.pki, Identity{Subject: `CN=Release\, Signing,O=Example Corp`}, subject(o, [][2]string{{"CN", "Release, Signing"}}))},
		{name: "comma not split off", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Subject: `CN=Release,O=Example Corp`}, subject([][2]string{{"O", "Example Corp"}}, [][2]string{{"CN", "Release,O=Example Corp"}}))},

		// 4. The SAN that matched is reported, not the first.
		{name: "two e-mails, second matched", build: build(f.pki, Identity{Email: "release@example.com"}, emails("mallory@evil.example", "release@example.com")),
			check: identity("release@example.com")},
		{name: "two e-mails, identity", build: build(f.pki, Identity{SAN: "release@example.com"}, emails("mallory@evil.example", "release@example.com")),
			check: identity("release@example.com")},
		{name: "two e-mails, regexp", build: build(f.pki, Identity{SANRegexp: `release@.*`}, emails("mallory@evil.example", "release@example.com")),
			check: identity("release@example.com")},
		{name: "DNS SAN with an e-mail's text, identity", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{SAN: "release@example.com"}, dnsOnly("release@example.com"))},
		{name: "DNS SAN with an e-mail's text, e-mail", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Email: "release@example.com"}, dnsOnly("release@example.com"))},
		{name: "e-mail SAN, DNS criterion", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{DNS: "example.com"}, emails("release@example.com"))},

		// URIs: scheme and host case-insensitive for the URI criterion only.
		{name: "HTTPS URI, URI criterion", build: build(f.pki, Identity{URI: "https://github.com/acme/notes"}, uriSAN("HTTPS://GitHub.com/acme/notes")),
			check: identity("HTTPS://GitHub.com/acme/notes")},
		{name: "URI path case matters", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{URI: "https://github.com/ACME/notes"}, uriSAN("HTTPS://GitHub.com/acme/notes"))},
		{name: "HTTPS URI, identity exact", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{SAN: "https://github.com/acme/notes"}, uriSAN("HTTPS://GitHub.com/acme/notes"))},
		{name: "HTTPS URI, identity as encoded", build: build(f.pki, Identity{SAN: "HTTPS://GitHub.com/acme/notes"}, uriSAN("HTTPS://GitHub.com/acme/notes"))},
		{name: "URI, an e-mail criterion", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Email: "https://github.com/acme/notes"}, uriSAN("https://github.com/acme/notes"))},

		// 5. CA leaves, issuer extensions, DNS-only leaves.
		{name: "CA leaf", step: StepChain, is: ErrLeafIsCA, build: build(f.pki, Identity{Email: "release@example.com"}, func(c *x509.Certificate) {
			c.BasicConstraintsValid, c.IsCA = true, true
		})},
		{name: "issuer extensions disagree", step: StepIdentity, is: ErrIssuerExtensions,
			build: build(f.pki, Identity{Email: "release@example.com"}, issuers("https://a.example", "https://b.example"))},
		{name: "issuer extensions disagree, issuer named", step: StepIdentity, is: ErrIssuerExtensions,
			build: build(f.pki, Identity{Email: "release@example.com", Issuer: "https://b.example"}, issuers("https://a.example", "https://b.example"))},
		{name: "issuer extensions agree", build: build(f.pki, Identity{Email: "release@example.com", Issuer: "https://a.example"}, issuers("https://a.example", "https://a.example")),
			check: func(t *testing.T, res *Result) {
				if res.Issuer != "https://a.example" || res.Certificate.Issuer != "https://a.example" {
					t.Errorf("issuer %q", res.Issuer)
				}
			}},
		{name: "issuer reported when the SAN does not match", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{Email: "someone@example.com"}, issuers("https://a.example", "https://a.example")),
			check: func(t *testing.T, res *Result) {
				if res.Issuer != "https://a.example" {
					t.Errorf("issuer %q, want the certificate's (verifier.go:440)", res.Issuer)
				}
			}},
		{name: "DNS-only leaf", build: build(f.pki, Identity{DNS: "signer.example.com"}, dnsOnly("signer.example.com")),
			check: identity("signer.example.com")},
		{name: "DNS-only leaf, second name", build: build(f.pki, Identity{DNS: "b.example.com"}, dnsOnly("a.example.com", "b.example.com")),
			check: identity("b.example.com")},
		{name: "DNS-only leaf, wrong name", step: StepIdentity, is: ErrIdentityMismatch,
			build: build(f.pki, Identity{DNS: "other.example.com"}, dnsOnly("signer.example.com")),
			check: func(t *testing.T, res *Result) {
				if res.Certificate.SubjectAlternativeName == unsummarizedSAN {
					t.Error("the placeholder SAN is reported")
				}
			}},
		{name: "DNS-only leaf, constrained CA, inside", build: build(dept, Identity{DNS: "signer.dept.example.com"}, dnsOnly("signer.dept.example.com"))},
		{name: "DNS-only leaf, constrained CA, outside", step: StepChain,
			build: build(dept, Identity{DNS: "signer.example.com"}, dnsOnly("signer.example.com"))},
	})
}

// TestIdentitySigstoreOtherName: for the sigstore method the Fulcio
// otherName is an identity (the virtual Sigstore's CA stands in for Fulcio
// in the matcher; its leaves have no SCT, so the matcher is tested alone).
func TestIdentitySigstoreOtherName(t *testing.T) {
	f := newFixture(t)
	tmpl := leafTemplate(t)
	otherNameOnly(t, "release@example.com")(tmpl)
	tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, fulcioExt(t, certificate.OIDIssuerV2, "https://issuer.example"))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := f.pki.issue(t, key.Public(), tmpl)
	for _, tc := range []struct {
		method Method
		id     Identity
		ok     bool
	}{
		{MethodSigstore, Identity{SAN: "release@example.com", Issuer: "https://issuer.example"}, true},
		{MethodSigstore, Identity{SANRegexp: `release@example\.com`, Issuer: "https://issuer.example"}, true},
		{MethodSigstore, Identity{SAN: "release@example.com", Issuer: "https://other.example"}, false},
		{MethodCertificate, Identity{SAN: "release@example.com"}, false},
		{MethodCertificate, Identity{SANRegexp: ".*"}, false},
	} {
		m, err := compileIdentity(tc.method, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.verifyCert(tc.method, leaf, certificate.Summary{})
		if tc.ok != (err == nil) {
			t.Errorf("%s %+v: %v", tc.method, tc.id, err)
		}
		if err != nil && !errors.Is(err, ErrIdentityMismatch) {
			t.Errorf("%s %+v: %v is not an identity mismatch", tc.method, tc.id, err)
		}
		if tc.ok && got.identity != "release@example.com" {
			t.Errorf("identity %q", got.identity)
		}
	}
}

func TestNewRefusesIdentityForms(t *testing.T) {
	f := newFixture(t)
	cas := f.pki.authorities(t)
	for _, tc := range []struct {
		id     Identity
		substr string
	}{
		{Identity{Subject: "CN=MCP Release Signing, O=Example Corp"}, `write "CN=MCP Release Signing,O=Example Corp"`},
		{Identity{Subject: "cn=MCP Release Signing"}, "unknown attribute type"},
		{Identity{Subject: "CN=Café"}, `write "CN=Caf\C3\A9"`},
		{Identity{Subject: "2.5.4.3=x"}, `write "CN=x"`},
		{Identity{DNS: "release@example.com"}, "not a DNS name"},
		{Identity{DNS: "*"}, "not a DNS name"},
	} {
		_, err := New(Trust{CertificateAuthorities: cas}, Policy{Method: MethodCertificate, Identities: []Identity{tc.id}, AllowCurrentTime: true})
		if err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%+v: %v, want %q", tc.id, err, tc.substr)
		}
	}
	if _, err := New(Trust{CertificateAuthorities: cas}, Policy{Method: MethodCertificate, Identities: []Identity{{DNS: "*.example.com"}}, AllowCurrentTime: true}); err != nil {
		t.Errorf("wildcard DNS name: %v", err)
	}
}

func TestCheckLeaf(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    x509.Certificate
		is   error
	}{
		{"code signing", x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}, nil},
		{"CA", x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}, ErrLeafIsCA},
		{"no digitalSignature", x509.Certificate{KeyUsage: x509.KeyUsageCertSign}, ErrKeyUsage},
		{"serverAuth", x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ErrKeyUsage},
	} {
		if err := checkLeaf(&tc.c); !errors.Is(err, tc.is) || (tc.is == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		}
	}
}

func TestCheckClaims(t *testing.T) {
	snap := exampleSnapshot()
	src := &attest.Source{Repository: "https://github.com/acme/notes-mcp", Commit: strings.Repeat("a", 40)}
	st, err := attest.Parse(statementOf(t, snap, attest.Options{Source: src}))
	if err != nil {
		t.Fatal(err)
	}
	agree := &certificate.Summary{Extensions: certificate.Extensions{SourceRepositoryURI: src.Repository, SourceRepositoryDigest: src.Commit}}
	contradict := &certificate.Summary{Extensions: certificate.Extensions{SourceRepositoryURI: "https://github.com/evil/x", SourceRepositoryDigest: src.Commit}}
	for _, tc := range []struct {
		name   string
		cert   *certificate.Summary
		fulcio bool
		want   ClaimStatus
		is     error
	}{
		{"Fulcio, agreeing", agree, true, ClaimVerified, nil},
		{"Fulcio, contradicting", contradict, true, "", ErrClaimMismatch},
		{"enterprise, agreeing", agree, false, ClaimUnverified, nil},
		{"enterprise, contradicting", contradict, false, ClaimUnverified, nil},
		{"key", nil, false, ClaimUnverified, nil},
	} {
		claims, err := checkClaims(st, tc.cert, tc.fulcio)
		if tc.is != nil {
			if !errors.Is(err, tc.is) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
			}
			continue
		}
		if err != nil || len(claims) != 2 {
			t.Fatalf("%s: %+v, %v", tc.name, claims, err)
		}
		for _, c := range claims {
			if c.Status != tc.want {
				t.Errorf("%s: %+v", tc.name, c)
			}
		}
	}
}

func TestURIEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{"https://github.com/acme", "https://github.com/acme", true},
		{"HTTPS://GitHub.COM/acme", "https://github.com/acme", true},
		{"https://github.com/ACME", "https://github.com/acme", false},
		{"https://github.com/acme?Q=1", "https://github.com/acme?q=1", false},
		{"https://github.com/a#F", "https://github.com/a#f", false},
		{"https://User@github.com/a", "https://user@github.com/a", false},
		{"https://user@GITHUB.com:443/a", "https://user@github.com:443/a", true},
		{"https://github.com:443/a", "https://github.com/a", false},
		{"https://github.com/%7e", "https://github.com/~", false},
		{"https://github.com/%7e", "https://github.com/%7E", false},
		{"https://[::1]:8/a", "https://[::1]:8/a", true},
		{"https://github.\u212Aom/a", "https://github.kom/a", false},
		{"urn:Example:x", "URN:Example:x", true},
		{"urn:Example:x", "urn:example:x", false},
		{"https://github.com", "https://github.com/", false},
		{"nocolon", "NOCOLON", false},
	} {
		if got := uriEqual(tc.a, tc.b); got != tc.eq {
			t.Errorf("uriEqual(%q, %q) = %v", tc.a, tc.b, got)
		}
		if got := uriEqual(tc.b, tc.a); got != tc.eq {
			t.Errorf("uriEqual(%q, %q) = %v (not symmetric)", tc.b, tc.a, got)
		}
	}
}

func TestParseSANs(t *testing.T) {
	on, err := cryptoutils.MarshalOtherNameSAN("release@example.com", false)
	if err != nil {
		t.Fatal(err)
	}
	var onRaw []asn1.RawValue
	if _, err := asn1.Unmarshal(on.Value, &onRaw); err != nil {
		t.Fatal(err)
	}
	ext := sanExt(t, gn(1, "a@example.com"), gn(2, "a@example.com"), gn(6, "HTTPS://X/a"), onRaw[0],
		asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 7, Bytes: []byte{127, 0, 0, 1}})
	got, err := parseSANs(&x509.Certificate{Extensions: []pkix.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	want := []san{{sanEmail, "a@example.com"}, {sanDNS, "a@example.com"}, {sanURI, "HTTPS://X/a"}, {sanFulcio, "release@example.com"}, {sanOther, ""}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("SAN %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range [][]byte{{0x31, 0}, {0x30, 0x02, 0x04, 0x00}, {0x30, 0x02, 0xa0, 0x00}, {0x30, 0x02, 0x81}} {
		if _, err := parseSANs(&x509.Certificate{Extensions: []pkix.Extension{{Id: cryptoutils.SANOID, Value: bad}}}); !errors.Is(err, errSAN) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

// FuzzParseSANs: any SAN extension is read without panic, and the URIs it
// yields compare equal to themselves.
func FuzzParseSANs(f *testing.F) {
	on, _ := cryptoutils.MarshalOtherNameSAN("release@example.com", false)
	f.Add(on.Value)
	f.Add(sanExt(f, gn(1, "a@example.com"), gn(6, "HTTPS://X:1/a?b#c")).Value)
	f.Fuzz(func(t *testing.T, data []byte) {
		sans, err := parseSANs(&x509.Certificate{Extensions: []pkix.Extension{{Id: cryptoutils.SANOID, Value: data}}})
		if err != nil {
			if !errors.Is(err, errSAN) {
				t.Fatalf("error %v is not errSAN", err)
			}
			return
		}
		for _, s := range sans {
			if s.kind == sanURI && !uriEqual(s.value, s.value) {
				t.Fatalf("%q is not equal to itself", s.value)
			}
			if scheme, rest, ok := cutScheme(s.value); ok && s.kind == sanURI && !uriEqual(s.value, strings.ToUpper(scheme)+":"+rest) {
				t.Fatalf("%q: the scheme's case matters", s.value)
			}
		}
	})
}
