package verify

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// checkLeaf refuses a signing certificate that is not meant for code
// signing: a CA certificate (basicConstraints CA:TRUE), or one whose key
// usage extension lacks digitalSignature (neither sigstore-go nor cosign
// checks it), or whose extended key usages, if any, do not include
// codeSigning. Go's path validation also applies the extended key usage to
// the chain.
func checkLeaf(cert *x509.Certificate) error {
	if cert.IsCA {
		return fmt.Errorf("%w: the signing certificate has basicConstraints CA:TRUE", ErrLeafIsCA)
	}
	if cert.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return fmt.Errorf("%w: the signing certificate lacks the digitalSignature key usage", ErrKeyUsage)
	}
	if len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0 {
		return nil
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageCodeSigning) {
		return fmt.Errorf("%w: the signing certificate's extended key usage does not include codeSigning", ErrKeyUsage)
	}
	return nil
}

// oidcIssuer returns the Fulcio OIDC issuer of cert: the extension
// 1.3.6.1.4.1.57264.1.8 (a DER UTF8String) or the deprecated .1.1 (raw
// bytes), "" when it has neither. Both present and different is refused
// (sigstore-go takes whichever comes last).
func oidcIssuer(cert *x509.Certificate) (string, error) {
	var v1, v8 string
	var has1, has8 bool
	for _, e := range cert.Extensions {
		switch {
		case e.Id.Equal(certificate.OIDIssuer):
			v1, has1 = string(e.Value), true
		case e.Id.Equal(certificate.OIDIssuerV2):
			if err := certificate.ParseDERString(e.Value, &v8); err != nil {
				return "", fmt.Errorf("%w: the OIDC issuer extension %s: %w", ErrIssuerExtensions, certificate.OIDIssuerV2, err)
			}
			has8 = true
		}
	}
	if has1 && has8 && v1 != v8 {
		return "", fmt.Errorf("%w: %s says %s, %s says %s", ErrIssuerExtensions,
			certificate.OIDIssuer, textsafe.RawQuote(v1), certificate.OIDIssuerV2, textsafe.RawQuote(v8))
	}
	if has8 {
		return v8, nil
	}
	return v1, nil
}

// identityKinds are the SAN types an identity (exact or regexp) is matched
// against: e-mail and URI; Fulcio's otherName only for the sigstore method,
// where a Fulcio CA of the trusted root issued it. An enterprise CA's name
// constraints cannot cover an otherName (crypto/x509 applies none to it),
// so the certificate method never matches one.
func identityKinds(m Method) []sanKind {
	if m == MethodSigstore {
		return []sanKind{sanEmail, sanURI, sanFulcio}
	}
	return []sanKind{sanEmail, sanURI}
}

// sanList describes SANs for an error message, when it is formatted.
type sanList []san

func (l sanList) String() string { return listSANs(l) }

// listSANs describes SANs for an error message.
func listSANs(sans []san) string {
	if len(sans) == 0 {
		return "none"
	}
	parts := make([]string, len(sans))
	for i, s := range sans {
		if s.kind == sanOther || s.kind == sanOtherName {
			parts[i] = "(" + s.kind.String() + ")"
			continue
		}
		parts[i] = s.kind.String() + " " + textsafe.RawQuote(s.value)
	}
	return strings.Join(parts, ", ")
}

// matched is what the identity step established.
type matched struct {
	// identity is the SAN the policy matched (of the first criterion with
	// a SAN, in the order identity, e-mail, URI, DNS), or "" when the
	// policy named no SAN.
	identity string
	// issuer is the Fulcio OIDC issuer, "" when the certificate has none.
	issuer string
}

// verifyCert matches a signing certificate against the policy on the
// certificate's own encoding: each SAN criterion only against the SAN
// types it names, the subject against the DER subject. Every criterion
// given must hold.
func (m *matcher) verifyCert(method Method, cert *x509.Certificate, s certificate.Summary) (matched, error) {
	var out matched
	id := &m.id
	fail := func(format string, args ...any) (matched, error) {
		if m.quiet {
			return out, ErrIdentityMismatch
		}
		return out, fmt.Errorf("%w: "+format, append([]any{ErrIdentityMismatch}, args...)...)
	}
	sans, err := parseSANs(cert)
	if err != nil {
		return fail("%w", err)
	}
	if out.issuer, err = oidcIssuer(cert); err != nil {
		return out, err
	}
	first := func(kinds []sanKind, ok func(string) bool) (string, bool) {
		for _, s := range sans {
			if slices.Contains(kinds, s.kind) && ok(s.value) {
				return s.value, true
			}
		}
		return "", false
	}
	take := func(v string) {
		if out.identity == "" {
			out.identity = v
		}
	}

	if id.SAN != "" || m.sanRe != nil {
		want := func(v string) bool {
			return (id.SAN == "" || v == id.SAN) && (m.sanRe == nil || m.sanRe.MatchString(v))
		}
		v, ok := first(identityKinds(method), want)
		if !ok {
			if m.quiet {
				return fail("")
			}
			criterion := textsafe.RawQuote(id.SAN)
			if id.SAN == "" {
				criterion = "matching " + textsafe.RawQuote(m.sanRe.String())
			}
			if _, other := first([]sanKind{sanFulcio}, want); other && method != MethodSigstore {
				return fail("the identity %s is only in the certificate's %s SAN, which is not an identity for the certificate method: an enterprise CA's name constraints do not apply to it", criterion, sanFulcio)
			}
			return fail("no e-mail or URI SAN %s in the certificate (its SANs: %s)", criterion, sanList(sans))
		}
		take(v)
	}
	if id.Email != "" {
		v, ok := first([]sanKind{sanEmail}, func(v string) bool { return v == id.Email })
		if !ok {
			return fail("no e-mail SAN %s in the certificate (its SANs: %s)", textsafe.RawQuote(id.Email), sanList(sans))
		}
		take(v)
	}
	if id.URI != "" {
		v, ok := first([]sanKind{sanURI}, func(v string) bool { return uriEqual(v, id.URI) })
		if !ok {
			return fail("no URI SAN %s in the certificate (its SANs: %s)", textsafe.RawQuote(id.URI), sanList(sans))
		}
		take(v)
	}
	if id.DNS != "" {
		v, ok := first([]sanKind{sanDNS}, func(v string) bool { return v == id.DNS })
		if !ok {
			return fail("no DNS SAN %s in the certificate (its SANs: %s)", textsafe.RawQuote(id.DNS), sanList(sans))
		}
		take(v)
	}
	if id.Subject != "" {
		subject, subjectErr := dn.Format(cert.RawSubject)
		switch {
		case subjectErr != nil:
			return fail("the certificate subject cannot be compared: %w", subjectErr)
		case subject != id.Subject:
			return fail("the certificate subject is %s, the policy wants %s", textsafe.RawQuote(subject), textsafe.RawQuote(id.Subject))
		}
	}
	if id.Issuer != "" || m.issuerRe != nil {
		switch {
		case out.issuer == "":
			return fail("the policy names an OIDC issuer but the certificate has no issuer extension")
		case id.Issuer != "" && out.issuer != id.Issuer:
			return fail("the OIDC issuer is %s, the policy wants %s", textsafe.RawQuote(out.issuer), textsafe.RawQuote(id.Issuer))
		case m.issuerRe != nil && !m.issuerRe.MatchString(out.issuer):
			return fail("the OIDC issuer %s does not match %s", textsafe.RawQuote(out.issuer), textsafe.RawQuote(m.issuerRe.String()))
		}
	}
	if err := certificate.CompareExtensions(m.workflows, s.Extensions); err != nil {
		return fail("%w", err)
	}
	return out, nil
}
