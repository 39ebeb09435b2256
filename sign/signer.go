package sign

import (
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Signer is one of KeySigner, CertificateSigner and SigstoreSigner.
type Signer interface {
	// Method names the signing method: the verification method that
	// checks its bundles.
	Method() evidence.Method
	isSigner()
}

// KeySigner signs with a private key the publisher holds; the bundle
// carries the key's hint (KeyHint), and verifiers pin the public key.
type KeySigner struct {
	keypair *Keypair
}

// NewKeySigner returns a signer for key (see LoadPrivateKey).
func NewKeySigner(key crypto.Signer) (*KeySigner, error) {
	kp, err := NewKeypair(key)
	if err != nil {
		return nil, err
	}
	return &KeySigner{keypair: kp}, nil
}

// Method returns evidence.MethodKey.
func (*KeySigner) Method() evidence.Method { return evidence.MethodKey }
func (*KeySigner) isSigner()               {}

// PublicKey returns the signer's public key.
func (s *KeySigner) PublicKey() crypto.PublicKey { return s.keypair.GetPublicKey() }

// trustedKey is trusted material holding the signer's own public key, for
// the self-check.
func (s *KeySigner) trustedKey() (root.TrustedMaterial, error) {
	v, err := signature.LoadDefaultVerifier(s.keypair.GetPublicKey())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedKey, err)
	}
	hint := string(s.keypair.GetHint())
	key := root.NewExpiringKey(v, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(id string) (root.TimeConstrainedVerifier, error) {
		if id != hint {
			return nil, fmt.Errorf("no key with hint %s", textsafe.RawQuote(id))
		}
		return key, nil
	}), nil
}

// CertificateSigner signs with a private key and an x509 certificate from
// an enterprise CA.
type CertificateSigner struct {
	keypair       *Keypair
	leaf          *x509.Certificate
	intermediates []*x509.Certificate
	root          *x509.Certificate
	// EmbedChain puts the intermediates into the bundle (an
	// x509CertificateChain, which v0.3 verifiers must be told to accept);
	// by default the bundle holds the leaf only and verifiers get the
	// intermediates with their trusted roots.
	EmbedChain bool
}

// NewCertificateSigner checks, before anything is signed, that leaf belongs
// to key and may sign code at now (CheckLeaf), and that chain (the issuing
// intermediates in order, optionally ending with the root) links leaf to a
// root (CheckChain). roots are further trusted roots for the self-check when
// chain does not end with one.
func NewCertificateSigner(key crypto.Signer, leaf *x509.Certificate, chain, roots []*x509.Certificate, now time.Time) (*CertificateSigner, error) {
	kp, err := NewKeypair(key)
	if err != nil {
		return nil, err
	}
	if err := CheckLeaf(leaf, key.Public(), now); err != nil {
		return nil, err
	}
	if err := CheckChain(leaf, chain, now); err != nil {
		return nil, err
	}
	inter, rootCert := SplitChain(chain)
	if rootCert == nil {
		// The chain stops at an intermediate: find its issuer among roots.
		top := leaf
		if len(inter) > 0 {
			top = inter[len(inter)-1]
		}
		for _, r := range roots {
			if top.CheckSignatureFrom(r) == nil {
				rootCert = r
				break
			}
		}
		if rootCert == nil {
			return nil, &CertificateError{
				Reason: "no root CA certificate to check the chain against",
				Hint:   "end the chain with the root certificate, or give it among the trusted roots",
				Cause:  ErrNoRootCA,
			}
		}
	}
	if err := CheckChain(leaf, append(append([]*x509.Certificate{}, inter...), rootCert), now); err != nil {
		return nil, err
	}
	return &CertificateSigner{keypair: kp, leaf: leaf, intermediates: inter, root: rootCert}, nil
}

// Method returns evidence.MethodCertificate.
func (*CertificateSigner) Method() evidence.Method { return evidence.MethodCertificate }
func (*CertificateSigner) isSigner()               {}

// Leaf returns the signing certificate.
func (s *CertificateSigner) Leaf() *x509.Certificate { return s.leaf }

func (s *CertificateSigner) trustedCA() root.TrustedMaterial {
	return &caMaterial{ca: &root.FulcioCertificateAuthority{Root: s.root, Intermediates: s.intermediates}}
}

// caMaterial is trusted material holding one certificate authority.
type caMaterial struct {
	root.BaseTrustedMaterial
	ca root.CertificateAuthority
}

func (m *caMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority {
	return []root.CertificateAuthority{m.ca}
}

// SigstoreSigner signs keylessly: an ephemeral ECDSA P-256 key and a Fulcio
// certificate for the identity of an OIDC token.
type SigstoreSigner struct {
	token     *Token
	fulcioURL string
}

// NewSigstoreSigner returns a keyless signer that will ask the Fulcio at
// fulcioURL for a certificate for token's identity.
func NewSigstoreSigner(token *Token, fulcioURL string) (*SigstoreSigner, error) {
	if token == nil {
		return nil, ErrNoToken
	}
	if err := checkServiceURL("Fulcio", fulcioURL); err != nil {
		return nil, err
	}
	return &SigstoreSigner{token: token, fulcioURL: fulcioURL}, nil
}

// Method returns evidence.MethodSigstore.
func (*SigstoreSigner) Method() evidence.Method { return evidence.MethodSigstore }
func (*SigstoreSigner) isSigner()               {}

// Token returns the identity token the signer uses.
func (s *SigstoreSigner) Token() *Token { return s.token }

func checkServiceURL(service, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s URL %s: want http(s)://host[:port][/path]", service, textsafe.RawQuote(raw))
	}
	return nil
}

func isEd25519(s Signer) bool {
	var kp *Keypair
	switch s := s.(type) {
	case *KeySigner:
		kp = s.keypair
	case *CertificateSigner:
		kp = s.keypair
	default:
		return false
	}
	_, ok := kp.GetPublicKey().(ed25519.PublicKey)
	return ok
}

var errNoSigner = errors.New("no signer")
