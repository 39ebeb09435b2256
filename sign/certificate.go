package sign

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/mcpsign/mcpsign/trustroot"
)

// MaxChainCertificates bounds the certificates of a chain file.
const MaxChainCertificates = 10

// ErrCertificate is wrapped by every refusal of a certificate for signing.
var ErrCertificate = errors.New("certificate refused for signing")

// Refusals of a chain a caller may want to tell apart (the Cause of a
// *CertificateError).
var (
	// ErrChainOrder: a certificate of the chain did not issue the one
	// before it (the chain is not the issuing intermediates in order).
	ErrChainOrder = errors.New("the chain is not in issuing order")
	// ErrNoRootCA: the chain does not end with a root, and no root given
	// issued its last certificate.
	ErrNoRootCA = errors.New("no root CA certificate")
)

// CertificateError says why a certificate cannot sign, and what to do.
type CertificateError struct {
	// Reason is what is wrong, e.g. "expired on 2024-01-01T00:00:00Z".
	Reason string
	// Hint says what to do.
	Hint string
	// Cause is ErrChainOrder, ErrNoRootCA or nil.
	Cause error
}

func (e *CertificateError) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%v: %s", ErrCertificate, e.Reason)
	}
	return fmt.Sprintf("%v: %s; %s", ErrCertificate, e.Reason, e.Hint)
}

// Unwrap makes errors.Is(err, ErrCertificate) hold, and errors.Is(err,
// e.Cause) when there is one.
func (e *CertificateError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrCertificate}
	}
	return []error{ErrCertificate, e.Cause}
}

// ParseCertificates reads PEM certificates (at most MaxChainCertificates)
// as trustroot.ParseCertificatesPEM does: anything that is not a
// CERTIFICATE block is refused, and so are trailing bytes.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("certificate file of %d bytes is larger than %d", len(data), MaxKeyFileBytes)
	}
	out, err := trustroot.ParseCertificatesPEM(data)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxChainCertificates {
		return nil, fmt.Errorf("%d certificates, more than %d", len(out), MaxChainCertificates)
	}
	return out, nil
}

// CheckLeaf refuses, before anything is signed, a leaf certificate that
// verifiers would refuse or that does not belong to the key: its public key
// differs from pub; now is outside its validity; it lacks the
// digitalSignature key usage; it has an extended key usage other than
// codeSigning (no EKU extension at all is accepted); or it is a CA.
func CheckLeaf(leaf *x509.Certificate, pub crypto.PublicKey, now time.Time) error {
	if err := cryptoutils.EqualKeys(leaf.PublicKey, pub); err != nil {
		return &CertificateError{
			Reason: "the certificate's public key does not match the private key",
			Hint:   "pass the certificate issued for this key (compare 'openssl x509 -pubkey -noout -in CERT' with 'openssl pkey -pubout -in KEY')",
		}
	}
	if now.Before(leaf.NotBefore) {
		return &CertificateError{
			Reason: fmt.Sprintf("not valid before %s (now %s)", leaf.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)),
			Hint:   "check the system clock, or wait until the certificate is valid",
		}
	}
	if now.After(leaf.NotAfter) {
		return &CertificateError{
			Reason: fmt.Sprintf("expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339)),
			Hint:   "renew the certificate with your CA",
		}
	}
	if leaf.IsCA {
		return &CertificateError{Reason: "it is a CA certificate", Hint: "sign with an end-entity (leaf) certificate issued by the CA"}
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return &CertificateError{
			Reason: "it lacks the digitalSignature key usage",
			Hint:   "ask your CA for a code-signing certificate with keyUsage digitalSignature",
		}
	}
	if len(leaf.UnknownExtKeyUsage) > 0 {
		return &CertificateError{
			Reason: fmt.Sprintf("it has the extended key usage %s, and only codeSigning is accepted", leaf.UnknownExtKeyUsage[0]),
			Hint:   "ask your CA for a certificate with extendedKeyUsage codeSigning only",
		}
	}
	for _, eku := range leaf.ExtKeyUsage {
		if eku != x509.ExtKeyUsageCodeSigning {
			return &CertificateError{
				Reason: fmt.Sprintf("it has the extended key usage %s, and only codeSigning is accepted", ekuName(eku)),
				Hint:   "ask your CA for a certificate with extendedKeyUsage codeSigning only",
			}
		}
	}
	return nil
}

// CheckChain checks that chain (intermediates, then optionally the root)
// links leaf to its root, each certificate signed by the next and valid at
// now. It does not decide trust: verifiers pin the roots.
func CheckChain(leaf *x509.Certificate, chain []*x509.Certificate, now time.Time) error {
	child := leaf
	for i, c := range chain {
		if err := child.CheckSignatureFrom(c); err != nil {
			return &CertificateError{
				Reason: fmt.Sprintf("chain certificate #%d (%s) did not issue %s: %v", i+1, c.Subject, child.Subject, err),
				Hint:   "give the chain as the issuing intermediates in order, then the root",
				Cause:  ErrChainOrder,
			}
		}
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			return &CertificateError{
				Reason: fmt.Sprintf("chain certificate #%d (%s) is not valid now (valid %s to %s)", i+1, c.Subject,
					c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339)),
				Hint: "renew the CA certificate or fetch the current chain from your CA",
			}
		}
		child = c
	}
	return nil
}

// SplitChain separates a chain into intermediates and the root (the last
// certificate when it is self-signed; nil otherwise).
func SplitChain(chain []*x509.Certificate) (intermediates []*x509.Certificate, rootCert *x509.Certificate) {
	if n := len(chain); n > 0 {
		last := chain[n-1]
		if last.CheckSignatureFrom(last) == nil && string(last.RawIssuer) == string(last.RawSubject) {
			return chain[:n-1], last
		}
	}
	return chain, nil
}

func ekuName(eku x509.ExtKeyUsage) string {
	switch eku {
	case x509.ExtKeyUsageAny:
		return "any"
	case x509.ExtKeyUsageServerAuth:
		return "serverAuth"
	case x509.ExtKeyUsageClientAuth:
		return "clientAuth"
	case x509.ExtKeyUsageEmailProtection:
		return "emailProtection"
	case x509.ExtKeyUsageTimeStamping:
		return "timeStamping"
	case x509.ExtKeyUsageOCSPSigning:
		return "OCSPSigning"
	}
	return fmt.Sprintf("#%d", eku)
}
