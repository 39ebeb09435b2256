package verify

import (
	"fmt"
	"strconv"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/attest"
)

// ClaimStatus says whether the signing certificate vouches for a predicate
// claim.
type ClaimStatus string

// Claim statuses. A claim that contradicts the certificate is not a status:
// it fails the statement step.
const (
	// ClaimVerified: a Fulcio source extension of a certificate issued by a
	// Fulcio CA of the trusted root (sigstore method) agrees.
	ClaimVerified ClaimStatus = "verified"
	// ClaimUnverified: only the signer's word (no certificate, an
	// enterprise certificate, or no such extension in it).
	ClaimUnverified ClaimStatus = "unverified"
)

// Claim is one signer-asserted fact in the predicate about where the
// definitions come from.
type Claim struct {
	// Name is "source.repository", "source.commit", "source.ref" or
	// "package[N].purl".
	Name   string      `json:"name"`
	Value  string      `json:"value"`
	Status ClaimStatus `json:"status"`
	// Evidence says what vouched for it, or why nothing could.
	Evidence string `json:"evidence"`
}

// sourceExtensions pairs each source claim with the Fulcio extension that
// can vouch for it.
var sourceExtensions = []struct {
	name  string
	oid   string
	claim func(*attest.Source) string
	ext   func(*certificate.Extensions) string
}{
	{"source.repository", "1.3.6.1.4.1.57264.1.12 (source repository URI)",
		func(s *attest.Source) string { return s.Repository },
		func(e *certificate.Extensions) string { return e.SourceRepositoryURI }},
	{"source.commit", "1.3.6.1.4.1.57264.1.13 (source repository digest)",
		func(s *attest.Source) string { return s.Commit },
		func(e *certificate.Extensions) string { return e.SourceRepositoryDigest }},
	{"source.ref", "1.3.6.1.4.1.57264.1.14 (source repository ref)",
		func(s *attest.Source) string { return s.Ref },
		func(e *certificate.Extensions) string { return e.SourceRepositoryRef }},
}

// checkClaims compares the predicate's source claims with the certificate's
// Fulcio source extensions (cert is nil for a key signature). Only a
// certificate from a Fulcio CA of the trusted root (fulcio, the sigstore
// method) vouches for them: an enterprise CA's leaf may carry the same
// extensions with any value, so they are ignored and its claims stay
// unverified. A claim a Fulcio certificate contradicts is an error; one it
// cannot vouch for is marked unverified. Package claims are always the
// signer's word.
func checkClaims(st *attest.Statement, cert *certificate.Summary, fulcio bool) ([]Claim, error) {
	var out []Claim
	if src := st.Predicate.Source; src != nil {
		for _, se := range sourceExtensions {
			v := se.claim(src)
			if v == "" {
				continue
			}
			c := Claim{Name: se.name, Value: v, Status: ClaimUnverified}
			switch {
			case cert == nil:
				c.Evidence = "signed with a key: no certificate to vouch for it"
			case !fulcio:
				c.Evidence = "signed with an enterprise certificate: only a Fulcio CA of the trusted root vouches for " + se.oid
			case se.ext(&cert.Extensions) == "":
				c.Evidence = "the certificate has no extension " + se.oid
			case se.ext(&cert.Extensions) != v:
				return out, fmt.Errorf("%w: the predicate says %s is %s, the certificate's extension %s says %s",
					ErrClaimMismatch, se.name, strconv.Quote(v), se.oid, strconv.Quote(se.ext(&cert.Extensions)))
			default:
				c.Status = ClaimVerified
				c.Evidence = "agrees with the certificate's extension " + se.oid
			}
			out = append(out, c)
		}
	}
	for i, p := range st.Predicate.Package {
		out = append(out, Claim{
			Name: fmt.Sprintf("package[%d].purl", i), Value: p.PURL, Status: ClaimUnverified,
			Evidence: "no certificate extension vouches for packages",
		})
	}
	return out, nil
}
