package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"slices"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/mcpsign/mcpsign/attest"
)

func TestCertificateMatcher(t *testing.T) {
	t.Parallel()
	pki := newPKI(t, "Fulcio")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := leafTemplate(t)
	tmpl.ExtraExtensions = append(tmpl.ExtraExtensions,
		fulcioExt(t, certificate.OIDIssuerV2, "https://token.actions.githubusercontent.com"),
		fulcioExt(t, certificate.OIDSourceRepositoryURI, "https://github.com/acme/notes-mcp"),
		fulcioExt(t, certificate.OIDSourceRepositoryDigest, "0123456789abcdef0123456789abcdef01234567"),
		fulcioExt(t, certificate.OIDSourceRepositoryRef, "refs/tags/v1.3.0"))
	leaf := pki.issue(t, key.Public(), tmpl)
	const issuer = "https://token.actions.githubusercontent.com"

	m, err := NewCertificateMatcher(MethodSigstore, []Identity{
		{SAN: "someone@example.com", Issuer: issuer},
		{SANRegexp: `release@example\.(com|org)`, Issuer: issuer},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Match(leaf)
	if err != nil {
		t.Fatal(err)
	}
	want := attest.Source{Repository: "https://github.com/acme/notes-mcp", Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/tags/v1.3.0"}
	if len(got.Identities) != 1 || got.Identities[0] != 1 || got.Identity != "release@example.com" || got.Issuer != issuer || got.Source == nil || *got.Source != want {
		t.Fatalf("%+v %+v", got, got.Source)
	}
	for i, r := range m.RequiredBytes() {
		// Exact identity, else exact issuer: in the DER of every match.
		if r == nil || (i == 1 && !bytes.Contains(leaf.Raw, r)) {
			t.Errorf("required bytes %d: %q", i, r)
		}
	}

	// MayMatch on the SAN and issuer extensions alone, as a monitor passes
	// them.
	names := &x509.Certificate{Extensions: slices.DeleteFunc(slices.Clone(leaf.Extensions), func(e pkix.Extension) bool {
		return !e.Id.Equal(cryptoutils.SANOID) && !e.Id.Equal(certificate.OIDIssuerV2)
	})}
	if !m.MayMatch(names) || !m.MayMatch(leaf) {
		t.Error("MayMatch false for a certificate that matches")
	}

	for _, tc := range []struct {
		name     string
		ids      []Identity
		mayMatch bool
	}{
		{"other identity", []Identity{{SAN: "release@example.org", Issuer: issuer}}, false},
		{"other issuer", []Identity{{SAN: "release@example.com", Issuer: "https://accounts.google.com"}}, false},
		{"other repository", []Identity{{SAN: "release@example.com", Issuer: issuer, GitHubWorkflowRepository: "acme/other"}}, true},
		{"two, neither", []Identity{{SAN: "a@example.com", Issuer: issuer}, {SAN: "b@example.com", Issuer: issuer}}, false},
	} {
		m, err := NewCertificateMatcher(MethodSigstore, tc.ids)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Match(leaf); !errors.Is(err, ErrIdentityMismatch) {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if got := m.MayMatch(names); got != tc.mayMatch {
			t.Errorf("%s: MayMatch %v", tc.name, got)
		}
	}
	if _, err := NewCertificateMatcher(MethodKey, nil); err == nil {
		t.Error("key method accepted")
	}
	if _, err := NewCertificateMatcher(MethodSigstore, []Identity{{SAN: "a@example.com"}}); !errors.Is(err, ErrNoIssuer) {
		t.Errorf("no issuer: %v", err)
	}
}

func TestLiteralPrefix(t *testing.T) {
	t.Parallel()
	for re, want := range map[string]string{
		`^https://github\.com/acme/notes-mcp/.*`:   "https://github.com/acme/notes-mcp/",
		`https://github\.com/acme/.+@refs/tags/.*`: "https://github.com/acme/",
		`\Arelease@example\.(com|org)`:             "release@example.",
		`(?i)release@example\.com`:                 "",
		`.*@acme\.com`:                             "",
		`a|b`:                                      "",
		`(release)@x`:                              "",
		`[`:                                        "",
	} {
		if got := literalPrefix(re); got != want {
			t.Errorf("literalPrefix(%q) = %q, want %q", re, got, want)
		}
	}
}
