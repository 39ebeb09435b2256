package trustroot

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Bounds on PEM input.
const (
	// MaxPEMBytes is the largest PEM file read (certificates or a key).
	MaxPEMBytes = 1 << 20
	// MaxPEMCertificates is the most certificates read from one PEM file.
	MaxPEMCertificates = 100
)

// ParseCertificatesPEM parses every CERTIFICATE block of data, in order
// (the one reader of PEM certificates: sign's chains too). It refuses data
// with no certificate, a block of another type, trailing non-PEM bytes,
// more than MaxPEMCertificates certificates or more than MaxPEMBytes (an
// error wrapping ErrTooLarge).
func ParseCertificatesPEM(data []byte) ([]*x509.Certificate, error) {
	if len(data) > MaxPEMBytes {
		return nil, fmt.Errorf("%w: PEM data is %d bytes, more than %d", ErrTooLarge, len(data), MaxPEMBytes)
	}
	// cryptoutils parses any block as a certificate and says little about
	// what it refuses: the blocks are named and counted first.
	n := 0
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %s, want CERTIFICATE", n+1, textsafe.RawQuote(block.Type))
		}
		if n == MaxPEMCertificates {
			return nil, fmt.Errorf("more than %d certificates", MaxPEMCertificates)
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	if len(trimSpace(rest)) > 0 {
		return nil, fmt.Errorf("unexpected data after certificate %d", n)
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEMLimited(data, MaxPEMCertificates)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	if len(certs) != n {
		return nil, fmt.Errorf("%d PEM certificates read as %d", n, len(certs))
	}
	return certs, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// Errors of LoadPKI, each wrapped with the file and certificate it is about.
var (
	// ErrPEM: the PEM data is not one or more CERTIFICATE blocks and
	// nothing else (see ParseCertificatesPEM).
	ErrPEM = errors.New("not a PEM certificate list")
	// ErrNotCA: a root or intermediate is not a CA certificate (basic
	// constraints with the CA bit, and keyCertSign when it has a key
	// usage).
	ErrNotCA = errors.New("not a CA certificate")
)

// pkiMaterial is trusted material made only of certificate authorities.
type pkiMaterial struct {
	root.BaseTrustedMaterial
	cas []root.CertificateAuthority
}

func (p *pkiMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority { return p.cas }

// LoadPKI returns trusted material for certificates issued by an enterprise
// x509 PKI: one certificate authority per root certificate in rootsPEM
// (named "pki:" and the root's subject DN), each with every certificate of
// intermediatesPEM (which may be empty) as a possible intermediate. A leaf
// verifies when crypto/x509 builds a path from it to one of the roots at the
// verified signing time with the code-signing extended key usage allowed
// along the path (a leaf without extended key usage is allowed), exactly as
// for a Fulcio certificate. The material has no logs, timestamping
// authorities or keys: combine it with the ones the policy requires
// (root.TrustedMaterialCollection, LogsAndTimestamps).
//
// Both inputs are read as ParseCertificatesPEM reads them (bounded; a
// refusal wraps ErrPEM, or ErrTooLarge for more than MaxPEMBytes). Every root
// and intermediate must be a CA certificate (basic constraints with the CA
// bit, and keyCertSign when it has a key usage; ErrNotCA). A root need not be self-signed: it is a trust anchor
// by configuration, as in crypto/x509 and cosign, so an issuing CA below
// the enterprise root may be given as the root to trust only what it
// issued (its own signature is never checked, so a SHA-1 self-signature
// does not refuse an old root). This is the one builder of enterprise trust (docs/TRUSTROOT.md "Enterprise PKI").
func LoadPKI(rootsPEM, intermediatesPEM []byte) (root.TrustedMaterial, error) {
	roots, err := parsePKI(rootsPEM)
	if err != nil {
		return nil, fmt.Errorf("CA roots: %w", err)
	}
	var inters []*x509.Certificate
	if len(trimSpace(intermediatesPEM)) > 0 {
		if inters, err = parsePKI(intermediatesPEM); err != nil {
			return nil, fmt.Errorf("CA intermediates: %w", err)
		}
	}
	for i, c := range roots {
		if err := checkCA(c); err != nil {
			return nil, fmt.Errorf("CA roots: certificate %d (%s): %w", i+1, dn.String(c.RawSubject), err)
		}
	}
	for i, c := range inters {
		if err := checkCA(c); err != nil {
			return nil, fmt.Errorf("CA intermediates: certificate %d (%s): %w", i+1, dn.String(c.RawSubject), err)
		}
	}
	m := &pkiMaterial{}
	for _, r := range roots {
		m.cas = append(m.cas, &root.FulcioCertificateAuthority{
			Root:          r,
			Intermediates: append([]*x509.Certificate(nil), inters...),
			URI:           "pki:" + dn.String(r.RawSubject),
		})
	}
	return m, nil
}

// checkCA refuses a certificate that may not issue certificates: without
// basic constraints CA:TRUE, or with a key usage that lacks keyCertSign
// (RFC 5280 4.2.1.3; crypto/x509 checks neither the key usage of a CA).
func checkCA(c *x509.Certificate) error {
	if !c.BasicConstraintsValid || !c.IsCA {
		return ErrNotCA
	}
	if c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("%w: its key usage lacks keyCertSign", ErrNotCA)
	}
	return nil
}

// parsePKI is ParseCertificatesPEM with its refusals wrapped in ErrPEM,
// but for data over MaxPEMBytes (ErrTooLarge).
func parsePKI(data []byte) ([]*x509.Certificate, error) {
	certs, err := ParseCertificatesPEM(data)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrPEM, err)
	}
	return certs, nil
}

// LoadPKIFiles is LoadPKI on the contents of two PEM files; intermediates
// may be "".
func LoadPKIFiles(rootsPath, intermediatesPath string) (root.TrustedMaterial, error) {
	rootsPEM, err := readCapped(rootsPath, MaxPEMBytes)
	if err != nil {
		return nil, err
	}
	var interPEM []byte
	if intermediatesPath != "" {
		if interPEM, err = readCapped(intermediatesPath, MaxPEMBytes); err != nil {
			return nil, err
		}
	}
	tm, err := LoadPKI(rootsPEM, interPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rootsPath, err)
	}
	return tm, nil
}

// LoadPublicKey returns trusted material holding one PEM public key (a
// "PUBLIC KEY" block, PKIX) for the key method: ECDSA on P-256, P-384 or
// P-521 (verified with SHA-256, SHA-384, SHA-512), Ed25519, or RSA of at
// least 2048 bits (PKCS #1 v1.5, SHA-256), the defaults of sigstore's
// signature package. The key is valid at every time and answers every key
// hint, as cosign's --key does: a signature by another key fails to verify.
func LoadPublicKey(pemBytes []byte) (root.TrustedMaterial, error) {
	v, err := ParsePublicKeyPEM(pemBytes)
	if err != nil {
		return nil, err
	}
	key := root.NewExpiringKey(v, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return key, nil
	}), nil
}

// LoadPublicKeyFile is LoadPublicKey on the contents of a file.
func LoadPublicKeyFile(path string) (root.TrustedMaterial, error) {
	data, err := readCapped(path, MaxPEMBytes)
	if err != nil {
		return nil, err
	}
	tm, err := LoadPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tm, nil
}

// ParsePublicKeyPEM parses one PEM public key and returns its verifier (see
// LoadPublicKey for the accepted keys).
func ParsePublicKeyPEM(pemBytes []byte) (signature.Verifier, error) {
	if len(pemBytes) > MaxPEMBytes {
		return nil, fmt.Errorf("PEM data is %d bytes, more than %d", len(pemBytes), MaxPEMBytes)
	}
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block is %s, want PUBLIC KEY", textsafe.RawQuote(block.Type))
	}
	if len(trimSpace(rest)) > 0 {
		return nil, errors.New("unexpected data after the public key")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	if err := checkPublicKey(pub); err != nil {
		return nil, err
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return v, nil
}

func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return nil
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits: at least 2048 are required", k.N.BitLen())
		}
		return nil
	}
	return fmt.Errorf("unsupported public key type %T", pub)
}
