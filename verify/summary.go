package verify

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"

	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// unsummarizedSAN is the Fulcio otherName summarizable gives sigstore-go to
// summarize; it is never reported or matched (the identity step matches
// the certificate's own SANs and replaces the summary's).
const unsummarizedSAN = "mcpsign: no e-mail, URI or otherName SAN"

// summarizable returns the bundle as sigstore-go verifies it for the
// certificate method. sigstore-go refuses ("failed to summarize
// certificate") a leaf with no URI, e-mail or Fulcio otherName SAN, so a
// leaf whose SANs are all DNS names (or IP addresses) could never pass
// --certificate-dns. For such a leaf only, sigstore-go is handed a copy
// whose parsed extension list (not its DER, not the names Go's path
// validation and name constraints read: DNSNames, EmailAddresses, URIs,
// IPAddresses) carries one more SAN extension with a placeholder otherName
// for its summary. Every other leaf is verified as the bundle holds it.
func summarizable(b *parsedBundle, leaf *x509.Certificate) (sgverify.SignedEntity, error) {
	if len(leaf.URIs) > 0 || len(leaf.EmailAddresses) > 0 || (len(leaf.DNSNames) == 0 && len(leaf.IPAddresses) == 0) {
		return b, nil
	}
	sans, err := parseSANs(leaf)
	if err != nil {
		return nil, err
	}
	// sanOther: IP addresses, directoryNames, … (sigstore-go reads none).
	if slices.ContainsFunc(sans, func(s san) bool { return s.kind != sanDNS && s.kind != sanOther }) {
		return b, nil
	}
	ext, err := cryptoutils.MarshalOtherNameSAN(unsummarizedSAN, false)
	if err != nil {
		return nil, err
	}
	return summaryEntity{b, ext}, nil
}

// summaryEntity is a bundle whose leaf sigstore-go sees with one more
// parsed extension.
type summaryEntity struct {
	*parsedBundle
	ext *pkix.Extension
}

func (e summaryEntity) VerificationContent() (sgverify.VerificationContent, error) {
	vc, err := e.parsedBundle.VerificationContent()
	if err != nil {
		return nil, err
	}
	c := *vc.Certificate()
	c.Extensions = append(slices.Clip(c.Extensions), *e.ext)
	return summaryContent{vc, &c}, nil
}

type summaryContent struct {
	sgverify.VerificationContent
	leaf *x509.Certificate
}

func (c summaryContent) Certificate() *x509.Certificate { return c.leaf }
