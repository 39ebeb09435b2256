package verify

import (
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// ReportVersion is the version of the JSON report. It changes only when a
// member is removed or changes meaning; members may be added.
const ReportVersion = 1

// Report is the stable JSON form of a verification (docs/VERIFY.md,
// "JSON output"), success or failure. Strings are as found in the bundle
// and the server (JSON-escaped, not textsafe-escaped), except the diffs,
// which are escaped for display.
type Report struct {
	ReportVersion int  `json:"reportVersion"`
	Verified      bool `json:"verified"`
	// FailedStep is the step that failed; "" on success or when the
	// failure is not a verification step (bad input, I/O).
	FailedStep Step `json:"failedStep,omitempty"`
	// Error is the reason of the failure; "" on success.
	Error string `json:"error,omitempty"`

	Method          Method               `json:"method,omitempty"`
	Identity        string               `json:"identity,omitempty"`
	Issuer          string               `json:"issuer,omitempty"`
	Subject         string               `json:"subject,omitempty"`
	Certificate     *certificate.Summary `json:"certificate,omitempty"`
	BundleDigest    string               `json:"bundleDigest,omitempty"`
	BundleMediaType string               `json:"bundleMediaType,omitempty"`
	Tlog            *TlogEvidence        `json:"tlog,omitempty"`
	SigningTime     *time.Time           `json:"signingTime,omitempty"`
	TimeSource      string               `json:"timeSource,omitempty"`

	// Server and ProtocolVersion are what was signed; ObservedServer is
	// the server now.
	Server          *digest.ServerInfo `json:"server,omitempty"`
	ProtocolVersion string             `json:"protocolVersion,omitempty"`
	ObservedServer  *digest.ServerInfo `json:"observedServer,omitempty"`
	Claims          []Claim            `json:"claims,omitempty"`
	// CertificateSource is what the certificate's Fulcio source extensions
	// vouch for (sigstore method).
	CertificateSource *attest.Source   `json:"certificateSource,omitempty"`
	Definitions       []Row            `json:"definitions,omitempty"`
	Instructions      *InstructionsRow `json:"instructions,omitempty"`
	Counts            map[Status]int   `json:"counts,omitempty"`

	// Sigstore is sigstore-go's verification result (its own JSON form,
	// mediaType application/vnd.dev.sigstore.verificationresult+json;
	// version=0.1), present once the cryptographic steps passed.
	Sigstore *sgverify.VerificationResult `json:"sigstore,omitempty"`
}

// NewReport describes the outcome of Verify or VerifyBundle: res may be
// nil (the bundle did not parse) and err nil (success).
func NewReport(res *Result, err error) *Report {
	r := &Report{ReportVersion: ReportVersion, Verified: err == nil && res != nil && res.Verified}
	if err != nil {
		r.Error = err.Error()
		r.FailedStep, _ = FailedStep(err)
	}
	if res == nil {
		return r
	}
	r.Method, r.Identity, r.Issuer, r.Subject = res.Method, res.Identity, res.Issuer, res.Subject
	r.Certificate = res.Certificate
	r.BundleDigest, r.BundleMediaType = res.BundleDigest, res.BundleMediaType
	r.Tlog = res.Tlog
	if !res.SigningTime.IsZero() {
		t := res.SigningTime.UTC()
		r.SigningTime = &t
		r.TimeSource = res.TimeSource
	}
	if res.Statement != nil {
		s := res.Server
		r.Server = &s
		r.ProtocolVersion = res.ProtocolVersion
	}
	r.ObservedServer = res.Observed
	r.Claims = res.Claims
	r.CertificateSource = res.CertificateSource
	r.Definitions = res.Definitions
	r.Instructions = res.Instructions
	if res.Definitions != nil || res.Instructions != nil {
		r.Counts = res.Counts()
	}
	r.Sigstore = res.Sigstore
	return r
}
