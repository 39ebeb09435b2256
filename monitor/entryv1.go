package monitor

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"

	"encoding/hex"

	"github.com/go-openapi/strfmt"
	"github.com/sigstore/rekor/pkg/generated/models"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// maxEntryV1 bounds a Rekor v1 entry body.
const maxEntryV1 = 1 << 20

// parseEntryV1 reads a Rekor v1 entry body (the canonicalized body, as
// the log returns it) of the kinds that hold a signer
// (docs/MONITOR.md "Rekor v1"): hashedrekord 0.0.1 (the signed artifact
// digest and the certificate or key of its signature), dsse 0.0.1 and
// intoto 0.0.1 and 0.0.2 (the payload digest and the certificate or key
// of each signature). The members are read with rekor's own models; the
// certificates and keys are PEM in the body and DER in the result. Another
// kind or version is ErrUnknownKind.
func parseEntryV1(body []byte) (*rawEntry, error) {
	if len(body) > maxEntryV1 {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrEntry, maxEntryV1)
	}
	var env struct {
		Kind       string          `json:"kind"`
		APIVersion string          `json:"apiVersion"`
		Spec       json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEntry, err)
	}
	e := &rawEntry{kind: env.Kind, apiVersion: env.APIVersion}
	var hash [2]*string
	var pems []*strfmt.Base64
	spec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(env.Spec))
		if err := d.Decode(v); err != nil {
			return fmt.Errorf("%w: %s %s spec: %v", ErrEntry, env.Kind, env.APIVersion, err)
		}
		return nil
	}
	switch env.Kind + " " + env.APIVersion {
	case "hashedrekord 0.0.1":
		var s models.HashedrekordV001Schema
		if err := spec(&s); err != nil {
			return nil, err
		}
		if s.Data != nil && s.Data.Hash != nil {
			hash = [2]*string{s.Data.Hash.Algorithm, s.Data.Hash.Value}
		}
		if s.Signature != nil && s.Signature.PublicKey != nil {
			pems = append(pems, &s.Signature.PublicKey.Content)
		}
	case "dsse 0.0.1":
		var s models.DSSEV001Schema
		if err := spec(&s); err != nil {
			return nil, err
		}
		if s.PayloadHash != nil {
			hash = [2]*string{s.PayloadHash.Algorithm, s.PayloadHash.Value}
		}
		for _, sg := range s.Signatures {
			if sg != nil {
				pems = append(pems, sg.Verifier)
			}
		}
	case "intoto 0.0.1":
		var s models.IntotoV001Schema
		if err := spec(&s); err != nil {
			return nil, err
		}
		if s.Content != nil && s.Content.PayloadHash != nil {
			hash = [2]*string{s.Content.PayloadHash.Algorithm, s.Content.PayloadHash.Value}
		}
		pems = append(pems, s.PublicKey)
	case "intoto 0.0.2":
		var s models.IntotoV002Schema
		if err := spec(&s); err != nil {
			return nil, err
		}
		if s.Content != nil && s.Content.PayloadHash != nil {
			hash = [2]*string{s.Content.PayloadHash.Algorithm, s.Content.PayloadHash.Value}
		}
		if s.Content != nil && s.Content.Envelope != nil {
			for _, sg := range s.Content.Envelope.Signatures {
				if sg != nil {
					pems = append(pems, sg.PublicKey)
				}
			}
		}
	default:
		return nil, fmt.Errorf("%w: kind %s version %s", ErrUnknownKind, textsafe.RawQuote(env.Kind), textsafe.RawQuote(env.APIVersion))
	}
	if hash[0] == nil || hash[1] == nil {
		return nil, fmt.Errorf("%w: %s entry without an artifact digest", ErrEntry, env.Kind)
	}
	e.digest = strings.ToLower(*hash[0]) + ":" + *hash[1]
	if !validV1Digest(e.digest) {
		return nil, fmt.Errorf("%w: %s entry digest %s is not sha256, sha384 or sha512 and its lowercase hex", ErrEntry, env.Kind, truncate([]byte(e.digest)))
	}
	if len(pems) == 0 {
		return nil, fmt.Errorf("%w: %s entry without a signature", ErrEntry, env.Kind)
	}
	for i, p := range pems {
		if p == nil {
			return nil, fmt.Errorf("%w: signature %d has no certificate or public key", ErrEntry, i)
		}
		b, rest := pem.Decode(*p)
		if b == nil || len(bytes.TrimSpace(rest)) > 0 {
			return nil, fmt.Errorf("%w: signature %d: the verifier is not one PEM block", ErrEntry, i)
		}
		switch b.Type {
		case "CERTIFICATE":
			e.signers = append(e.signers, rawSigner{cert: true, der: b.Bytes})
		case "PUBLIC KEY":
			e.signers = append(e.signers, rawSigner{der: b.Bytes})
		default:
			return nil, fmt.Errorf("%w: signature %d: a PEM %s block, not a certificate or public key", ErrEntry, i, truncate([]byte(b.Type)))
		}
	}
	return e, nil
}

// validV1Digest: "ALG:HEX" with a SHA-2 algorithm of the log and the hex
// of its length.
func validV1Digest(d string) bool {
	alg, h, _ := strings.Cut(d, ":")
	var n int
	switch alg {
	case "sha256":
		n = 32
	case "sha384":
		n = 48
	case "sha512":
		n = 64
	}
	b, err := hex.DecodeString(h)
	return n > 0 && err == nil && len(b) == n && h == strings.ToLower(h)
}
