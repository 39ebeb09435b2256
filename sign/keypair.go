package sign

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sigsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/evidence"
)

// Keypair is a sigstore-go sign.Keypair over a private key the signer holds
// (the key and certificate methods). ECDSA signs with the curve's hash
// (P-256/SHA-256, P-384/SHA-384), RSA with PKCS#1 v1.5 and SHA-256, Ed25519
// purely (no prehash).
type Keypair struct {
	signer crypto.Signer
	alg    signature.AlgorithmDetails
	hint   []byte
}

var _ sigsign.Keypair = (*Keypair)(nil)

// NewKeypair wraps signer, which must be of an algorithm LoadPrivateKey
// accepts.
func NewKeypair(signer crypto.Signer) (*Keypair, error) {
	if _, err := checkPrivateKey(signer); err != nil {
		return nil, err
	}
	alg, err := signature.GetDefaultAlgorithmDetails(signer.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedKey, err)
	}
	hint, err := KeyHint(signer.Public())
	if err != nil {
		return nil, err
	}
	return &Keypair{signer: signer, alg: alg, hint: []byte(hint)}, nil
}

// KeyHint returns the hint that identifies a public key in a bundle's
// verification material: base64 (standard, padded) of the SHA-256 of its
// DER SubjectPublicKeyInfo, as sigstore-go writes for its own keys.
// It is the digest of evidence.KeyDigest, which a KeyID spells in hex.
func KeyHint(pub crypto.PublicKey) (string, error) {
	sum, err := evidence.KeyDigest(pub)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupportedKey, err)
	}
	return base64.StdEncoding.EncodeToString(sum), nil
}

// GetHashAlgorithm returns the hash of the signing algorithm.
func (k *Keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }

// GetSigningAlgorithm returns the signing algorithm.
func (k *Keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}

// GetHint returns the public key hint (KeyHint).
func (k *Keypair) GetHint() []byte { return k.hint }

// GetKeyAlgorithm returns "ECDSA", "RSA" or "ED25519".
func (k *Keypair) GetKeyAlgorithm() string {
	switch k.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

// GetPublicKey returns the public key.
func (k *Keypair) GetPublicKey() crypto.PublicKey { return k.signer.Public() }

// GetPublicKeyPem returns the public key as PEM.
func (k *Keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return string(b), err
}

// SignData signs data and returns the signature and what was signed (the
// digest, or data itself for pure Ed25519).
func (k *Keypair) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	hf := k.alg.GetHashType()
	toSign := data
	var opts crypto.SignerOpts = hf
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	} else if _, ok := k.signer.(ed25519.PrivateKey); ok {
		opts = &ed25519.Options{}
	}
	sig, err := k.signer.Sign(rand.Reader, toSign, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	return sig, toSign, nil
}
