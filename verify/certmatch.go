package verify

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp/syntax"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// CertificateMatcher matches signing certificates against the identities
// of a policy, with the same matching as Verifier's identity step (the
// certificate's own SAN encoding, anchored regular expressions, the Fulcio
// issuer and workflow extensions), but without a bundle: for a caller that
// holds only a certificate, such as a transparency log monitor. It checks
// no chain and no signature.
type CertificateMatcher struct {
	method Method
	ids    []*matcher
	// names are ids without their workflow extensions (MayMatch).
	names []*matcher
}

// CertificateMatch is what a certificate satisfied.
type CertificateMatch struct {
	// Identities are the indices of the identities it satisfies.
	Identities []int
	// Identity is the SAN the first satisfied identity matched.
	Identity string
	// Issuer is the Fulcio OIDC issuer, "" when the certificate has none.
	Issuer string
	// Source is what the certificate's Fulcio source extensions vouch for
	// (sigstore method only; nil when it has none).
	Source *attest.Source
}

// NewCertificateMatcher compiles ids for method (MethodSigstore or
// MethodCertificate), as New does; at least one identity is needed.
func NewCertificateMatcher(method Method, ids []Identity) (*CertificateMatcher, error) {
	if method != MethodSigstore && method != MethodCertificate {
		return nil, fmt.Errorf("certificate identities are for the sigstore and certificate methods, not %s", textsafe.RawQuote(string(method)))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no identity to match", ErrNoIdentity)
	}
	ms, err := compileIdentities(method, ids)
	if err != nil {
		return nil, err
	}
	names := make([]*matcher, len(ms))
	for i, m := range ms {
		n := *m
		n.workflows, n.quiet = certificate.Extensions{}, true
		names[i] = &n
	}
	return &CertificateMatcher{method: method, ids: ms, names: names}, nil
}

// MayMatch reports whether cert's SANs, subject and OIDC issuer satisfy
// one of the identities: false means that Match fails; true leaves it to
// Match, which also checks the key usages and the Fulcio workflow
// extensions. It reads only cert.Extensions and cert.RawSubject, so that a
// caller that sees many certificates, such as a log monitor, may pass a
// certificate holding only those, read from the DER without a full parse,
// and parse only the certificates that may match.
func (m *CertificateMatcher) MayMatch(cert *x509.Certificate) bool {
	for _, n := range m.names {
		if _, err := n.verifyCert(m.method, cert, certificate.Summary{}); err == nil {
			return true
		}
	}
	return false
}

// Match matches cert against every identity. A certificate that satisfies
// none is ErrIdentityMismatch (an *IdentitiesError with several
// identities); one that cannot be read as a signing certificate (not for
// code signing, conflicting issuer extensions, malformed SANs) is another
// error.
func (m *CertificateMatcher) Match(cert *x509.Certificate) (*CertificateMatch, error) {
	if err := checkLeaf(cert); err != nil {
		return nil, err
	}
	// The Fulcio extensions are all the matcher reads of sigstore-go's
	// summary (it matches SANs and the issuer on the certificate itself).
	ext, err := certificate.ParseExtensions(cert.Extensions)
	if err != nil {
		return nil, fmt.Errorf("the certificate's Fulcio extensions: %w", err)
	}
	s := certificate.Summary{Extensions: ext}
	out := &CertificateMatch{}
	var errs []error
	for i, id := range m.ids {
		got, err := id.verifyCert(m.method, cert, s)
		if err != nil {
			if !errors.Is(err, ErrIdentityMismatch) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		if len(out.Identities) == 0 {
			out.Identity, out.Issuer = got.identity, got.issuer
		}
		out.Identities = append(out.Identities, i)
	}
	switch {
	case len(out.Identities) > 0:
		out.Source = vouchedSource(&s, m.method == MethodSigstore)
		return out, nil
	case len(errs) == 1:
		return nil, errs[0]
	}
	return nil, &IdentitiesError{Errs: errs}
}

// RequiredBytes returns, for each identity, bytes that the DER of every
// certificate it matches contains, or nil when there are none: its exact
// identity (a SAN's value is held as its bytes), else the literal text that
// begins every match of its identity regexp (at least 5 bytes), else its
// exact OIDC issuer (an extension holding the issuer's bytes). A caller that sees many
// certificates, such as a log monitor, may skip without parsing one whose
// DER contains none of them, provided none is nil.
func (m *CertificateMatcher) RequiredBytes() [][]byte {
	out := make([][]byte, len(m.ids))
	for i, id := range m.ids {
		switch {
		case m.method != MethodSigstore:
		case id.id.SAN != "":
			out[i] = []byte(id.id.SAN)
		case len(literalPrefix(id.id.SANRegexp)) >= 5:
			out[i] = []byte(literalPrefix(id.id.SANRegexp))
		case id.id.Issuer != "":
			out[i] = []byte(id.id.Issuer)
		}
	}
	return out
}

// literalPrefix is the case-sensitive literal text that begins every match
// of re (Go syntax), after any leading ^ or \A; "" when there is none.
func literalPrefix(re string) string {
	if re == "" {
		return ""
	}
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return ""
	}
	r = r.Simplify()
	for r.Op == syntax.OpCapture {
		r = r.Sub[0]
	}
	subs := []*syntax.Regexp{r}
	if r.Op == syntax.OpConcat {
		subs = r.Sub
	}
	for _, s := range subs {
		switch s.Op {
		case syntax.OpBeginText, syntax.OpBeginLine, syntax.OpEmptyMatch:
			continue
		case syntax.OpLiteral:
			if s.Flags&syntax.FoldCase != 0 {
				return ""
			}
			return string(s.Rune)
		}
		return ""
	}
	return ""
}
