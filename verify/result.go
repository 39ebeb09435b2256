package verify

import (
	"time"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
)

// Result is what a verification established. Fields are filled step by
// step: after a failure, those of the steps that passed are set.
type Result struct {
	// Verified is true only when every step passed.
	Verified bool
	Method   Method

	// Identity is the signer: the certificate SAN the policy matched (for
	// a certificate policy that names no SAN, the subject DN) or the public
	// key's ID (key, see KeyID).
	Identity string
	// MatchedIdentities are the indices in Policy.Identities of every
	// identity the signing certificate matches, in order; the first is the
	// one Identity and Certificate report. Nil for a key.
	MatchedIdentities []int
	// SignerKeyID is the KeyID of the public key that made the signature:
	// the policy's key, or the signing certificate's. One private key is
	// one signer, whatever the identities its certificates name.
	SignerKeyID string
	// Issuer is the OIDC issuer of a Fulcio certificate, or for an
	// enterprise certificate without one, its issuer's distinguished name.
	Issuer string
	// Subject is an enterprise certificate's subject distinguished name,
	// written from its DER as docs/VERIFY.md "Identity" says.
	Subject string
	// Certificate is sigstore-go's summary of the signing certificate:
	// SAN (set to the one the policy matched, "" when none), issuer and
	// every Fulcio extension; nil for a key.
	Certificate *certificate.Summary

	// BundleDigest is "sha256:" and the hex SHA-256 of the bundle bytes.
	BundleDigest    string
	BundleMediaType string
	// Tlog is the verified transparency log entry, when the policy
	// required one.
	Tlog *TlogEvidence
	// SigningTime is the earliest verified time the certificate was
	// checked at, and TimeSource its kind: "Tlog" (integrated time),
	// "TimestampAuthority" or "CurrentTime". Zero for a key signature
	// without timestamp.
	SigningTime time.Time
	TimeSource  string
	// Timestamps are all the verified times.
	Timestamps []sgverify.TimestampVerificationResult

	// Statement is the parsed, validated statement (Verify only).
	Statement *attest.Statement
	// Server and ProtocolVersion are what the statement says was signed;
	// Observed is the server as it introduced itself now. A different
	// name or version is reported, not failed: it is not shown to models.
	Server          digest.ServerInfo
	ProtocolVersion string
	Observed        *digest.ServerInfo
	// Claims are the predicate's source and package claims.
	Claims []Claim
	// CertificateSource is the source repository, commit and ref that the
	// signing certificate's Fulcio extensions vouch for (sigstore method
	// only); nil when it has none.
	CertificateSource *attest.Source
	// Definitions has one row per definition served or signed, ordered by
	// kind then key; Instructions is nil when neither side has any.
	Definitions  []Row
	Instructions *InstructionsRow

	// Sigstore is sigstore-go's verification result.
	Sigstore *sgverify.VerificationResult
}

// TlogEvidence identifies the transparency log entry of a bundle: the one
// tlog evidence type of sign, verify and pin (evidence.Tlog).
type TlogEvidence = evidence.Tlog

// Counts returns the number of definition rows (instructions included) by
// status.
func (r *Result) Counts() map[Status]int {
	c := map[Status]int{}
	for _, row := range r.Definitions {
		c[row.Status]++
	}
	if r.Instructions != nil {
		c[r.Instructions.Status]++
	}
	return c
}
