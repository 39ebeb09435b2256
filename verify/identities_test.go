package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestIdentities checks a policy of several identities: a bundle passes
// when its certificate matches any of them, the result lists every one it
// matches and reports the first, and a failure says why for each.
func TestIdentities(t *testing.T) {
	f := newFixture(t)
	const iss = "https://issuer.example"
	keyless := virtualAttest(t, f.vs, "release@example.com", iss, f.payload)
	cert := certSigned(t, f.pki, f.vs, f.payload, certOpts{tsa: true})
	// The virtual Sigstore issues no SCT: its keyless certificates are
	// checked under the certificate method, its CA as the enterprise root
	// (the sigstore method's several identities: stack_test.go).
	sig := func(ids ...Identity) *Verifier {
		return mustVerifier(t, Trust{Sigstore: f.vs, CertificateAuthorities: f.vs.FulcioCertificateAuthorities()},
			Policy{Method: MethodCertificate, Identities: ids, RequireTlog: true})
	}
	crt := func(ids ...Identity) *Verifier {
		return mustVerifier(t, Trust{Sigstore: f.vs, CertificateAuthorities: f.pki.authorities(t)}, Policy{Method: MethodCertificate, Identities: ids})
	}
	for _, tc := range []struct {
		name     string
		v        *Verifier
		bundle   []byte
		matched  []int  // nil: fails at the identity step
		identity string // Result.Identity
		substr   []string
	}{
		{name: "keyless, the second matches", v: sig(Identity{SAN: "alice@example.com", Issuer: iss}, Identity{SAN: "release@example.com", Issuer: iss}),
			bundle: keyless, matched: []int{1}, identity: "release@example.com"},
		{name: "keyless, both match", v: sig(Identity{SANRegexp: `.*@example\.com`, Issuer: iss}, Identity{SAN: "release@example.com", IssuerRegexp: `https://.*`}),
			bundle: keyless, matched: []int{0, 1}, identity: "release@example.com"},
		{name: "keyless, none matches", v: sig(Identity{SAN: "alice@example.com", Issuer: iss}, Identity{SAN: "release@example.com", Issuer: "https://other.example"}),
			bundle: keyless, substr: []string{"none of the policy's 2 identities matches", `identity 0: no e-mail or URI SAN "alice@example.com" in the certificate`, `identity 1: the OIDC issuer is "https://issuer.example", the policy wants "https://other.example"`}},
		{name: "certificate, subject or e-mail", v: crt(Identity{Subject: "CN=Someone Else,O=Example Corp"}, Identity{Email: "release@example.com"}, Identity{Subject: "CN=MCP Release Signing,O=Example Corp"}),
			bundle: cert, matched: []int{1, 2}, identity: "release@example.com"},
		{name: "certificate, one identity, its own error", v: crt(Identity{Email: "alice@example.com"}),
			bundle: cert, substr: []string{`signer identity does not match the policy: no e-mail SAN "alice@example.com"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.v.Verify(context.Background(), tc.bundle, f.snap)
			if tc.matched == nil {
				if step, _ := FailedStep(err); step != StepIdentity || !errors.Is(err, ErrIdentityMismatch) {
					t.Fatalf("got %v, want an identity mismatch", err)
				}
				for _, s := range tc.substr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%v lacks %q", err, s)
					}
				}
				if len(tc.v.Policy().Identities) > 1 {
					var ie *IdentitiesError
					if !errors.As(err, &ie) || len(ie.Errs) != len(tc.v.Policy().Identities) {
						t.Errorf("%v is not an IdentitiesError of each identity", err)
					}
				}
				if res == nil || res.MatchedIdentities != nil {
					t.Errorf("result %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.MatchedIdentities, tc.matched) || res.Identity != tc.identity {
				t.Errorf("matched %v as %q, want %v as %q", res.MatchedIdentities, res.Identity, tc.matched, tc.identity)
			}
			// The signer's key is the signing certificate's.
			b, err := ParseBundle(tc.bundle, true)
			if err != nil {
				t.Fatal(err)
			}
			vc, err := b.VerificationContent()
			if err != nil {
				t.Fatal(err)
			}
			if want, err := KeyID(vc.Certificate().PublicKey); err != nil || res.SignerKeyID != want {
				t.Errorf("SignerKeyID %q, want %q (%v)", res.SignerKeyID, want, err)
			}
		})
	}
	// A key signature matches no identity: the key is the identity.
	pb, pub := keySigned(t, f.payload, "application/vnd.in-toto+json")
	res, err := mustVerifier(t, Trust{}, Policy{Method: MethodKey, PublicKey: pub}).Verify(context.Background(), marshalBundle(t, pb), f.snap)
	if err != nil || res.MatchedIdentities != nil {
		t.Errorf("key: %v, matched %v", err, res.MatchedIdentities)
	}
	if want, _ := KeyID(pub); res.SignerKeyID != want || res.Identity != want {
		t.Errorf("key: SignerKeyID %q, identity %q, want %q", res.SignerKeyID, res.Identity, want)
	}
	// Names renumber the identities in the message.
	ie := &IdentitiesError{Errs: []error{fmt.Errorf("%w: no e-mail SAN", ErrIdentityMismatch), fmt.Errorf("%w: wrong subject", ErrIdentityMismatch)}, Names: []string{"identity 3", "identity 5"}}
	if got, want := ie.Error(), "signer identity does not match the policy: none of the policy's 2 identities matches (identity 3: no e-mail SAN; identity 5: wrong subject)"; got != want {
		t.Errorf("names:\n got %s\nwant %s", got, want)
	}
}

// TestNewIdentities checks that New names the identity of several that is
// incomplete, and that a method needing an identity refuses none.
func TestNewIdentities(t *testing.T) {
	f := newFixture(t)
	cas := f.pki.authorities(t)
	for _, tc := range []struct {
		name   string
		tr     Trust
		p      Policy
		want   error
		substr string
	}{
		{"sigstore, none", Trust{Sigstore: f.vs}, Policy{Method: MethodSigstore}, ErrNoIdentity, "the sigstore method needs the signer's identity"},
		{"sigstore, empty list", Trust{Sigstore: f.vs}, Policy{Method: MethodSigstore, Identities: []Identity{}}, ErrNoIdentity, ""},
		{"sigstore, second without issuer", Trust{Sigstore: f.vs}, Policy{Method: MethodSigstore, Identities: []Identity{{SAN: "a", Issuer: "b"}, {SAN: "c"}}}, ErrNoIssuer, "identity 1: "},
		{"certificate, none", Trust{CertificateAuthorities: cas}, Policy{Method: MethodCertificate, AllowCurrentTime: true}, ErrNoIdentity, "the certificate method needs"},
		{"certificate, second empty", Trust{CertificateAuthorities: cas}, Policy{Method: MethodCertificate, AllowCurrentTime: true, Identities: []Identity{{Email: "a@example.com"}, {}}}, ErrNoIdentity, "identity 1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.tr, tc.p)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.substr) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.substr)
			}
			if cerr := tc.p.CheckIdentity(); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("CheckIdentity: %v", cerr)
			}
		})
	}
	if _, err := New(Trust{}, Policy{Method: MethodKey, PublicKey: f.pki.rootKey.Public(), Identities: []Identity{{SAN: "a"}}}); err == nil || !strings.Contains(err.Error(), "the key method takes no certificate identity") {
		t.Errorf("key with an identity: %v", err)
	}
}
