package monitor

import (
	"crypto/x509"
	"encoding/hex"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	rekorpb "github.com/sigstore/rekor-tiles/v2/pkg/generated/protobuf"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Entry is what the monitor reads of one Rekor v2 log entry.
type Entry struct {
	// Kind and APIVersion of the entry, e.g. "hashedrekord" "0.0.2".
	Kind, APIVersion string
	// Digest is the logged artifact digest, "sha256:HEX" (the hashedrekord
	// data, or the DSSE payload hash).
	Digest string
	// Signers are the certificates or public keys that signed it.
	Signers []Signer
}

// Signer is one verifier of an entry: a certificate or a public key.
type Signer struct {
	// Certificate is the parsed signing certificate, nil for a key.
	Certificate *x509.Certificate
	// PublicKey is the DER (PKIX) public key, nil for a certificate.
	PublicKey []byte
}

// hashNames are the digest algorithms of the log, as mcpsign names them.
var hashNames = lazy.New(hashTable)

func hashTable() map[protocommon.HashAlgorithm]string {
	return map[protocommon.HashAlgorithm]string{
		protocommon.HashAlgorithm_SHA2_256: "sha256",
		protocommon.HashAlgorithm_SHA2_384: "sha384",
		protocommon.HashAlgorithm_SHA2_512: "sha512",
	}
}

// ParseEntry parses a Rekor v2 log entry (the canonical JSON of a
// hashedrekord or dsse entry, version 0.0.2, as the entry bundles hold it).
// Unknown members are refused. An entry of another kind or version is
// ErrUnknownKind.
func ParseEntry(data []byte) (*Entry, error) {
	var pe rekorpb.Entry
	if err := (protojson.UnmarshalOptions{}).Unmarshal(data, &pe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEntry, err)
	}
	e := &Entry{Kind: pe.GetKind(), APIVersion: pe.GetApiVersion()}
	var hash *protocommon.HashOutput
	var sigs []*rekorpb.Signature
	switch {
	case e.Kind == "hashedrekord" && e.APIVersion == "0.0.2" && pe.GetSpec().GetHashedRekordV002() != nil:
		h := pe.GetSpec().GetHashedRekordV002()
		hash, sigs = h.GetData(), []*rekorpb.Signature{h.GetSignature()}
	case e.Kind == "dsse" && e.APIVersion == "0.0.2" && pe.GetSpec().GetDsseV002() != nil:
		d := pe.GetSpec().GetDsseV002()
		hash, sigs = d.GetPayloadHash(), d.GetSignatures()
	default:
		return nil, fmt.Errorf("%w: kind %s version %s", ErrUnknownKind, textsafe.RawQuote(e.Kind), textsafe.RawQuote(e.APIVersion))
	}
	alg, ok := hashNames.Get()[hash.GetAlgorithm()]
	if !ok || len(hash.GetDigest()) == 0 {
		return nil, fmt.Errorf("%w: %s entry without a known artifact digest", ErrEntry, e.Kind)
	}
	e.Digest = alg + ":" + hex.EncodeToString(hash.GetDigest())
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%w: %s entry without a signature", ErrEntry, e.Kind)
	}
	for i, s := range sigs {
		v := s.GetVerifier()
		switch {
		case v.GetX509Certificate() != nil:
			c, err := x509.ParseCertificate(v.GetX509Certificate().GetRawBytes())
			if err != nil {
				return nil, fmt.Errorf("%w: signature %d: certificate: %v", ErrEntry, i, err)
			}
			e.Signers = append(e.Signers, Signer{Certificate: c})
		case v.GetPublicKey() != nil:
			if _, err := x509.ParsePKIXPublicKey(v.GetPublicKey().GetRawBytes()); err != nil {
				return nil, fmt.Errorf("%w: signature %d: public key: %v", ErrEntry, i, err)
			}
			e.Signers = append(e.Signers, Signer{PublicKey: v.GetPublicKey().GetRawBytes()})
		default:
			return nil, fmt.Errorf("%w: signature %d has no certificate or public key", ErrEntry, i)
		}
	}
	return e, nil
}

// ErrUnknownKind: an entry of a kind or version this monitor does not read
// (wraps ErrEntry).
var ErrUnknownKind = lazy.Wrap(ErrEntry, "unknown entry kind")
