package verify

import (
	"crypto"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Method is how the bundle must have been signed: the one method type of
// sign, verify and pin (evidence.Method; Valid reports a known one).
type Method = evidence.Method

// The signing methods (docs/SIGNING.md).
const (
	// MethodSigstore: a Fulcio certificate for an OIDC identity, with SCTs,
	// a transparency log entry and a verified signing time, all required.
	MethodSigstore = evidence.MethodSigstore
	// MethodKey: a plain public key; the log entry and the timestamp are
	// what Policy.RequireTlog and Policy.RequireTimestamp say.
	MethodKey = evidence.MethodKey
	// MethodCertificate: an enterprise x509 certificate chaining to
	// Trust.CertificateAuthorities at the verified signing time.
	MethodCertificate = evidence.MethodCertificate
)

// Identity names the signer a policy accepts. Empty fields are not checked.
// Every regular expression is matched against the whole value: mcpsign
// anchors it as ^(?:…)$ (sigstore-go and cosign do not).
type Identity struct {
	// SAN and SANRegexp match the certificate's identity: one of its
	// e-mail (rfc822Name) or URI SANs, byte for byte as the certificate
	// encodes them, and for the sigstore method also Fulcio's otherName
	// (1.3.6.1.4.1.57264.1.7). The certificate method never matches an
	// otherName: an enterprise CA's name constraints do not apply to it.
	// Both given: one SAN must satisfy both.
	SAN       string
	SANRegexp string
	// Issuer and IssuerRegexp match the Fulcio OIDC issuer extension
	// (1.3.6.1.4.1.57264.1.8, or .1.1; both present must agree). Required
	// for the sigstore method; for the certificate method the extension
	// must then be present.
	Issuer       string
	IssuerRegexp string

	// GitHub workflow claims, compared exactly with Fulcio's (deprecated,
	// still issued) extensions 1.3.6.1.4.1.57264.1.2-.6, as cosign does.
	GitHubWorkflowRepository string
	GitHubWorkflowRef        string
	GitHubWorkflowSHA        string
	GitHubWorkflowTrigger    string
	GitHubWorkflowName       string

	// For enterprise certificates (certificate method), which carry no OIDC
	// issuer. Subject is the subject distinguished name exactly as
	// `openssl x509 -noout -subject -nameopt RFC2253` prints it from the
	// certificate's DER (every RDN, most significant last, e.g.
	// "CN=MCP Release Signing,O=Example Corp"; docs/VERIFY.md "Identity");
	// New refuses one not written in that form. Email must equal one of the
	// certificate's e-mail SANs, DNS one of its DNS SANs (exactly), URI one
	// of its URI SANs with the scheme and host compared case-insensitively
	// and the rest exactly.
	Subject string
	Email   string
	URI     string
	DNS     string
}

func (id *Identity) pkiFields() bool {
	return id.Subject != "" || id.Email != "" || id.URI != "" || id.DNS != ""
}

func (id *Identity) any() bool {
	return *id != Identity{}
}

// Policy is what a bundle must satisfy besides the trusted material.
type Policy struct {
	Method Method
	// Identities are the signers the policy accepts, any of them (as
	// sigstore-go's WithCertificateIdentity given several times): a bundle
	// passes when its certificate matches one, and Result.MatchedIdentities
	// says which. MethodSigstore and MethodCertificate need at least one;
	// MethodKey takes none (the key is the identity).
	Identities []Identity
	// PublicKey is the signer's key, for MethodKey.
	PublicKey crypto.PublicKey

	// RequireTlog requires a verified transparency log entry (always
	// required by MethodSigstore).
	RequireTlog bool
	// RequireTimestamp requires a verified RFC 3161 timestamp.
	RequireTimestamp bool
	// AllowCurrentTime lets MethodCertificate check a bundle that has no
	// timestamp and no required log entry at the current time instead of a
	// verified signing time. A certificate that has expired since signing
	// then fails.
	AllowCurrentTime bool
	// Packages are released artifacts the statement must bind, each by a
	// digest of a predicate package entry (checked at the statement step).
	Packages []PackageRequirement
}

// Trust is the material a Verifier trusts.
type Trust struct {
	// Sigstore is the trusted material of a Sigstore deployment (a
	// trusted_root.json): its Fulcio CAs and CT logs for MethodSigstore, its
	// transparency logs and timestamp authorities for every method. For
	// MethodKey and MethodCertificate it is needed only when the policy
	// requires a log entry or a timestamp, or the bundle carries a
	// timestamp; its Fulcio CAs are never used for them.
	Sigstore root.TrustedMaterial
	// CertificateAuthorities anchor MethodCertificate: enterprise roots and
	// intermediates, as trustroot.LoadPKI builds them
	// (FulcioCertificateAuthorities of its material).
	CertificateAuthorities []root.CertificateAuthority
}

// anchored compiles re matched against a whole value (CompileAnchored),
// its error naming flag.
func anchored(flag, re string) (*regexp.Regexp, error) {
	r, err := CompileAnchored(re)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return r, nil
}

// CompileAnchored compiles an identity's regular expression as mcpsign
// matches it, against a whole value: ^(?:re)$ (sigstore-go and cosign do
// not anchor). An empty re is no criterion: nil, nil. It is the one
// anchoring rule; whoever matches an identity's regexp compiles it here.
func CompileAnchored(re string) (*regexp.Regexp, error) {
	if re == "" {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + re + `)$`)
}

// CheckIdentity reports, without any trusted material, whether the
// identities of p are complete and well-formed for its method: the first
// check of New, for a caller that wants it before loading a trusted root. A
// missing identity or issuer is ErrNoIdentity or ErrNoIssuer.
func (p Policy) CheckIdentity() error {
	if !p.Method.Valid() {
		return fmt.Errorf("unknown verification method %s (want sigstore, key or certificate)", textsafe.RawQuote(string(p.Method)))
	}
	_, err := compileIdentities(p.Method, p.Identities)
	return err
}

// compileIdentities compiles every identity of a policy; none is compiled
// as the empty identity, which only MethodKey accepts. With several, an
// error names the identity (its index).
func compileIdentities(m Method, ids []Identity) ([]*matcher, error) {
	if len(ids) == 0 {
		c, err := compileIdentity(m, Identity{})
		if err != nil {
			return nil, err
		}
		return []*matcher{c}, nil
	}
	out := make([]*matcher, 0, len(ids))
	for i, id := range ids {
		c, err := compileIdentity(m, id)
		if err != nil {
			if len(ids) > 1 {
				return nil, fmt.Errorf("identity %d: %w", i, err)
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// matcher is a compiled Identity.
type matcher struct {
	id        Identity
	sanRe     *regexp.Regexp
	issuerRe  *regexp.Regexp
	sigstore  sgverify.CertificateIdentity // for MethodSigstore: reported, not matched
	workflows certificate.Extensions
	// quiet: a mismatch is ErrIdentityMismatch without a description
	// (CertificateMatcher.MayMatch, called for many certificates).
	quiet bool
}

func compileIdentity(m Method, id Identity) (*matcher, error) {
	var err error
	c := &matcher{id: id}
	if c.sanRe, err = anchored("identity regexp", id.SANRegexp); err != nil {
		return nil, err
	}
	if c.issuerRe, err = anchored("issuer regexp", id.IssuerRegexp); err != nil {
		return nil, err
	}
	c.workflows = certificate.Extensions{
		GithubWorkflowRepository: id.GitHubWorkflowRepository,
		GithubWorkflowRef:        id.GitHubWorkflowRef,
		GithubWorkflowSHA:        id.GitHubWorkflowSHA,
		GithubWorkflowTrigger:    id.GitHubWorkflowTrigger,
		GithubWorkflowName:       id.GitHubWorkflowName,
	}
	switch m {
	case MethodSigstore:
		if id.SAN == "" && id.SANRegexp == "" {
			return nil, fmt.Errorf("%w: the sigstore method needs the signer's identity: a certificate identity or identity regexp", ErrNoIdentity)
		}
		if id.Issuer == "" && id.IssuerRegexp == "" {
			return nil, fmt.Errorf("%w: the sigstore method needs the OIDC issuer of the signer's identity: a certificate OIDC issuer or issuer regexp", ErrNoIssuer)
		}
		if id.pkiFields() {
			return nil, errors.New("subject, e-mail, URI and DNS criteria are for the certificate method")
		}
		san := sgverify.SubjectAlternativeNameMatcher{SubjectAlternativeName: id.SAN}
		if c.sanRe != nil {
			san.Regexp = *c.sanRe
		}
		iss := sgverify.IssuerMatcher{Issuer: id.Issuer}
		if c.issuerRe != nil {
			iss.Regexp = *c.issuerRe
		}
		c.sigstore, err = sgverify.NewCertificateIdentity(san, iss, c.workflows)
		if err != nil {
			return nil, err
		}
	case MethodCertificate:
		if !id.pkiFields() && id.SAN == "" && id.SANRegexp == "" {
			return nil, fmt.Errorf("%w: the certificate method needs the signer's identity: a certificate subject, e-mail, URI, DNS name, identity or identity regexp", ErrNoIdentity)
		}
		if id.DNS != "" && !validDNSName(id.DNS) {
			return nil, fmt.Errorf("certificate DNS name %s is not a DNS name (letters, digits and hyphens in dot-separated labels, or a leading *.)", textsafe.RawQuote(id.DNS))
		}
		if id.Subject != "" {
			canon, err := dn.Canonical(id.Subject)
			if err != nil {
				return nil, fmt.Errorf("certificate subject: %w", err)
			}
			if canon != id.Subject {
				return nil, fmt.Errorf("certificate subject %s is not written as certificates' subjects are compared (RFC 2253 as openssl -nameopt RFC2253 prints it): write %s",
					textsafe.RawQuote(id.Subject), textsafe.RawQuote(canon))
			}
		}
	case MethodKey:
		if id.any() {
			return nil, errors.New("the key method takes no certificate identity: the key is the identity")
		}
	}
	return c, nil
}

// KeyID returns the identity of a public key as mcpsign reports it:
// "sha256:" and the hex SHA-256 of its PKIX (SubjectPublicKeyInfo) DER
// (evidence.KeyID, the one computation of it).
func KeyID(pub crypto.PublicKey) (string, error) { return evidence.KeyID(pub) }

// validDNSName reports whether s is a host name as a dNSName SAN holds one:
// dot-separated labels of ASCII letters, digits and hyphens (not first or
// last), 1 to 63 bytes each, at most 253 in all; the first label may be
// "*". A DNS criterion outside this grammar could only match a SAN that is
// not a DNS name (such as an e-mail address in a dNSName).
func validDNSName(s string) bool {
	if s == "" || s == "*" || len(s) > 253 {
		return false
	}
	for i, label := range strings.Split(s, ".") {
		if i == 0 && label == "*" {
			continue
		}
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for j := 0; j < len(label); j++ {
			c := label[j]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
