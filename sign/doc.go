// Package sign signs an mcpsign in-toto Statement into a Sigstore bundle
// v0.3 (a DSSE envelope, payload type application/vnd.in-toto+json) with one
// of three methods:
//
//   - sigstore: an ephemeral key, a Fulcio certificate for an OIDC identity,
//     a Rekor entry and RFC 3161 timestamps (NewSigstoreSigner, IDToken);
//   - key: a private key the publisher holds (LoadPrivateKey, NewKeySigner),
//     optionally logged in Rekor and timestamped;
//   - certificate: a private key and an x509 certificate from an enterprise
//     CA (NewCertificateSigner), optionally logged and timestamped.
//
// The cryptography, DSSE, Fulcio, Rekor and TSA protocols are sigstore-go's
// (pkg/sign) and sigstore/sigstore's (key loading, OIDC flows); this package
// chooses and checks what goes in, and verifies every bundle with
// sigstore-go's verifier before returning it, so that a bundle that would
// not verify is never written.
//
// docs/SIGNING.md describes the methods and their flags; docs/STATEMENT.md
// the signed statement.
package sign
