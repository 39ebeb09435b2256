package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/attest"
)

// ClaimStatus says whether something other than the signer vouches for a
// predicate claim.
type ClaimStatus string

// Claim statuses. A claim that contradicts the certificate, or a required
// package the statement does not bind, is not a status: it fails the
// statement step.
const (
	// ClaimVerified: a Fulcio source extension of a certificate issued by a
	// Fulcio CA of the trusted root (sigstore method) agrees, or, for a
	// package, its digest is that of an artifact the policy requires.
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

// PackageRequirement is a released artifact that the statement must bind:
// some package entry of the predicate must carry a digest of it, and no
// digest of that entry may differ from the artifact's in an algorithm
// both have.
type PackageRequirement struct {
	// Name says which artifact it is in messages (a file name, an npm
	// integrity string); it is escaped when printed.
	Name string
	// Digests are the artifact's digests, algorithm → lowercase hex
	// ("sha256", "sha512").
	Digests map[string]string
}

// vouchedSource is the source a certificate's Fulcio extensions vouch for:
// only a certificate from a Fulcio CA of the trusted root (fulcio, the
// sigstore method) does; nil otherwise, or when it has no source extension.
func vouchedSource(cert *certificate.Summary, fulcio bool) *attest.Source {
	if cert == nil || !fulcio {
		return nil
	}
	e := &cert.Extensions
	s := attest.Source{Repository: e.SourceRepositoryURI, Commit: e.SourceRepositoryDigest, Ref: e.SourceRepositoryRef}
	if s == (attest.Source{}) {
		return nil
	}
	return &s
}

// checkClaims compares the predicate's source claims with the certificate's
// Fulcio source extensions (cert is nil for a key signature). Only a
// certificate from a Fulcio CA of the trusted root (fulcio, the sigstore
// method) vouches for them: an enterprise CA's leaf may carry the same
// extensions with any value, so they are ignored and its claims stay
// unverified. A claim a Fulcio certificate contradicts is an error; one it
// cannot vouch for is marked unverified. Package claims are the signer's
// word unless a required package (see checkPackages) vouches for them.
func checkClaims(st *attest.Statement, cert *certificate.Summary, fulcio bool) ([]Claim, error) {
	var out []Claim
	vouched := vouchedSource(cert, fulcio)
	if src := st.Predicate.Source; src != nil {
		if err := attest.CheckSource(src, vouched); err != nil {
			return out, fmt.Errorf("%w: %w", ErrClaimMismatch, err)
		}
		for _, f := range attest.SourceFields() {
			v := f.Get(src)
			if v == "" {
				continue
			}
			c := Claim{Name: f.Claim, Value: v, Status: ClaimUnverified}
			switch {
			case cert == nil:
				c.Evidence = "signed with a key: no certificate to vouch for it"
			case !fulcio:
				c.Evidence = "signed with an enterprise certificate: only a Fulcio CA of the trusted root vouches for " + f.Extension
			case vouched == nil || f.Get(vouched) == "":
				c.Evidence = "the certificate has no extension " + f.Extension
			default:
				c.Status = ClaimVerified
				c.Evidence = "agrees with the certificate's extension " + f.Extension
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

// checkPackages requires that the statement binds every required package,
// and marks the package claims it vouches for verified in claims. A
// failure wraps ErrPackageMismatch and names the artifact's digests and the
// statement's.
func checkPackages(st *attest.Statement, reqs []PackageRequirement, claims []Claim) error {
	for _, r := range reqs {
		found := -1
		for i, p := range st.Predicate.Package {
			common, differ := 0, false
			for alg, h := range p.Digest {
				if want, ok := r.Digests[alg]; ok {
					common++
					differ = differ || want != h
				}
			}
			if common > 0 && !differ {
				found = i
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("%w: the artifact %s is %s; the statement binds %s",
				ErrPackageMismatch, r.Name, digestList(r.Digests), boundList(st.Predicate.Package))
		}
		name := fmt.Sprintf("package[%d].purl", found)
		for i := range claims {
			if claims[i].Name == name {
				claims[i].Status = ClaimVerified
				claims[i].Evidence = "its digest is that of the required artifact " + r.Name
			}
		}
	}
	return nil
}

// digestList writes digests as "alg:hex", sorted, joined with " and ".
func digestList(d map[string]string) string {
	var s []string
	for alg, h := range d {
		s = append(s, alg+":"+h)
	}
	sort.Strings(s)
	return strings.Join(s, " and ")
}

func boundList(pkgs []attest.Package) string {
	if len(pkgs) == 0 {
		return "no package"
	}
	var s []string
	for i, p := range pkgs {
		d := digestList(p.Digest)
		if d == "" {
			d = "no digest"
		}
		s = append(s, fmt.Sprintf("package[%d] %s with %s", i, p.PURL, d))
	}
	return strings.Join(s, "; ")
}
