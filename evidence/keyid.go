package evidence

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// KeyDigest returns the SHA-256 of pub's DER SubjectPublicKeyInfo: the one
// digest that names a public key, spelled as a KeyID by mcpsign, in base64
// as a bundle's key hint, and as a transparency log's ID (a log without an
// origin, Rekor v1).
func KeyDigest(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return sum[:], nil
}

// KeyID returns the ID by which mcpsign names a public key everywhere
// (keygen, sign, verify, a lock's key approval, a policy's identities):
// "sha256:" and the lowercase hex of KeyDigest (docs/SIGNING.md).
func KeyID(pub crypto.PublicKey) (string, error) {
	sum, err := KeyDigest(pub)
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(sum), nil
}

// KeyIDOfHint returns the KeyID that a bundle's key hint spells (standard
// base64 of the same digest, as sigstore-go writes it); false when the
// hint is not base64 of a SHA-256.
func KeyIDOfHint(hint string) (string, bool) {
	raw, err := base64.StdEncoding.Strict().DecodeString(hint)
	if err != nil || len(raw) != sha256.Size {
		return "", false
	}
	return "sha256:" + hex.EncodeToString(raw), true
}

// BundleDigest returns "sha256:" and the hex SHA-256 of a bundle's bytes:
// the bundle digest a lock records (docs/LOCK.md "approval").
func BundleDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
