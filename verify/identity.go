package verify

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
)

// checkKeyUsage refuses a signing certificate that is not meant for code
// signing: the key usage extension must be present with digitalSignature
// (neither sigstore-go nor cosign checks it), and the extended key usages,
// if any, must include codeSigning. Go's path validation also applies the
// extended key usage to the chain.
func checkKeyUsage(cert *x509.Certificate) error {
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

// verifySigstore matches a Fulcio certificate's summary.
func (m *matcher) verifySigstore(s certificate.Summary) error {
	if err := m.sigstore.Verify(s); err != nil {
		return fmt.Errorf("%w: %w", ErrIdentityMismatch, err)
	}
	return nil
}

// sans lists a certificate's SAN values: e-mail addresses, URIs, DNS names,
// and the Fulcio otherName sigstore-go found.
func sans(cert *x509.Certificate, s certificate.Summary) []string {
	var out []string
	out = append(out, cert.EmailAddresses...)
	for _, u := range cert.URIs {
		out = append(out, u.String())
	}
	out = append(out, cert.DNSNames...)
	if s.SubjectAlternativeName != "" && !slices.Contains(out, s.SubjectAlternativeName) {
		out = append(out, s.SubjectAlternativeName)
	}
	return out
}

// verifyPKI matches an enterprise certificate: every criterion given must
// hold.
func (m *matcher) verifyPKI(cert *x509.Certificate, s certificate.Summary) error {
	id := &m.id
	mismatch := func(what, want, got string) error {
		return fmt.Errorf("%w: %s is %s, the policy wants %s", ErrIdentityMismatch, what, strconv.Quote(got), strconv.Quote(want))
	}
	if id.Subject != "" && cert.Subject.String() != id.Subject {
		return mismatch("the certificate subject", id.Subject, cert.Subject.String())
	}
	if id.Email != "" && !slices.Contains(cert.EmailAddresses, id.Email) {
		return fmt.Errorf("%w: no e-mail SAN %s in the certificate (it has %q)", ErrIdentityMismatch, strconv.Quote(id.Email), cert.EmailAddresses)
	}
	if id.URI != "" && !slices.ContainsFunc(cert.URIs, func(u *url.URL) bool { return u.String() == id.URI }) {
		return fmt.Errorf("%w: no URI SAN %s in the certificate", ErrIdentityMismatch, strconv.Quote(id.URI))
	}
	if id.DNS != "" && !slices.Contains(cert.DNSNames, id.DNS) {
		return fmt.Errorf("%w: no DNS SAN %s in the certificate (it has %q)", ErrIdentityMismatch, strconv.Quote(id.DNS), cert.DNSNames)
	}
	all := sans(cert, s)
	if id.SAN != "" && !slices.Contains(all, id.SAN) {
		return fmt.Errorf("%w: no SAN %s in the certificate (it has %q)", ErrIdentityMismatch, strconv.Quote(id.SAN), all)
	}
	if m.sanRe != nil && !slices.ContainsFunc(all, m.sanRe.MatchString) {
		return fmt.Errorf("%w: no SAN of the certificate (%q) matches %s", ErrIdentityMismatch, all, strconv.Quote(m.sanRe.String()))
	}
	if id.Issuer != "" || m.issuerRe != nil {
		switch {
		case s.Issuer == "":
			return fmt.Errorf("%w: the policy names an OIDC issuer but the certificate has no issuer extension", ErrIdentityMismatch)
		case id.Issuer != "" && s.Issuer != id.Issuer:
			return mismatch("the OIDC issuer", id.Issuer, s.Issuer)
		case m.issuerRe != nil && !m.issuerRe.MatchString(s.Issuer):
			return fmt.Errorf("%w: the OIDC issuer %s does not match %s", ErrIdentityMismatch, strconv.Quote(s.Issuer), strconv.Quote(m.issuerRe.String()))
		}
	}
	if err := certificate.CompareExtensions(m.workflows, s.Extensions); err != nil {
		return fmt.Errorf("%w: %w", ErrIdentityMismatch, err)
	}
	return nil
}
