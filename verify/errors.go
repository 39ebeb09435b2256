package verify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

// Step names one check of the verification. Every failure is a *StepError
// that says which step failed.
type Step string

// The steps, in the order of docs/VERIFY.md. The cryptographic checks
// (signature, chain, tlog, time) are made by sigstore-go in its own order:
// log entries first, then the signing time, the certificate chain and its
// SCTs, then the signature. The step reported is the first that failed.
const (
	// StepBundle: the bundle is read (size-capped), parsed and of a
	// supported version.
	StepBundle Step = "bundle"
	// StepSignature: the signature over the DSSE PAE (or the message), by
	// the certificate's or the given key.
	StepSignature Step = "signature"
	// StepChain: the certificate chains to the trusted authorities at the
	// verified signing time, is not a CA, has the digitalSignature key
	// usage and no EKU or codeSigning, and (Fulcio certificates) carries
	// verified SCTs.
	StepChain Step = "chain"
	// StepTlog: a transparency log entry for this very signature, with an
	// inclusion proof against a checkpoint signed by a trusted log, or a
	// signed entry timestamp.
	StepTlog Step = "tlog"
	// StepTime: a verified signing time (log integrated time or RFC 3161
	// timestamp), or the current time where the policy allows it.
	StepTime Step = "time"
	// StepIdentity: the signer's identity matches the policy.
	StepIdentity Step = "identity"
	// StepStatement: the DSSE payload type, the in-toto statement, its
	// subjects and predicate, and the predicate's claims that the
	// certificate can vouch for.
	StepStatement Step = "statement"
	// StepMatch: the observed definitions equal the signed ones, name for
	// name and digest for digest, instructions included.
	StepMatch Step = "match"
)

// StepError is a failed verification: the step that failed and why.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("verification failed at step %s: %v", e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// FailedStep returns the step named by a *StepError in err's chain, and
// false when err is not a verification failure.
func FailedStep(err error) (Step, bool) {
	var se *StepError
	if errors.As(err, &se) {
		return se.Step, true
	}
	return "", false
}

func stepErr(step Step, format string, args ...any) *StepError {
	return &StepError{Step: step, Err: fmt.Errorf(format, args...)}
}

// Errors a caller may want to tell apart (wrapped in a *StepError).
var (
	// ErrBundleTooLarge: the bundle is larger than MaxBundleBytes.
	ErrBundleTooLarge = errors.New("bundle too large")
	// ErrKeyUsage: the signing certificate lacks the digitalSignature key
	// usage, or has extended key usages without codeSigning.
	ErrKeyUsage = errors.New("certificate key usage does not allow code signing")
	// ErrLeafIsCA: the signing certificate is a CA certificate
	// (basicConstraints CA:TRUE).
	ErrLeafIsCA = errors.New("the signing certificate is a CA certificate")
	// ErrIssuerExtensions: the certificate's two Fulcio OIDC issuer
	// extensions (1.3.6.1.4.1.57264.1.1 and .1.8) disagree, or .1.8 is
	// malformed.
	ErrIssuerExtensions = errors.New("the certificate's OIDC issuer extensions are inconsistent")
	// ErrNoSigningTime: no verified time to check the certificate at.
	ErrNoSigningTime = errors.New("no verified signing time")
	// ErrNoTimestamp wraps ErrNoSigningTime: a certificate bundle has no
	// RFC 3161 timestamp and the policy requires no log entry and does not
	// allow the current time.
	ErrNoTimestamp = lazy.Wrap(ErrNoSigningTime, "the bundle has no RFC 3161 timestamp")
	// ErrTimestampNoRoot wraps ErrNoSigningTime: a certificate bundle's
	// RFC 3161 timestamp cannot be checked without a trusted root that
	// lists its timestamp authority, and none was given.
	ErrTimestampNoRoot = lazy.Wrap(ErrNoSigningTime, "the bundle's RFC 3161 timestamp needs the trusted root that lists its timestamp authority")
	// ErrLogIndex: the verified log entry's index is beyond MaxLogIndex, or
	// nothing vouches for it (a Rekor v1 entry without its signed entry
	// timestamp).
	ErrLogIndex = errors.New("log index out of range")
	// ErrIdentityMismatch: the signer is not the one the policy names.
	ErrIdentityMismatch = errors.New("signer identity does not match the policy")
	// ErrNotSubject: VerifyBundle's artifact (or digest) is not among the
	// statement's subjects, or is not the message signed: the signature
	// verified, over something else (StepMatch).
	ErrNotSubject = errors.New("the artifact is not a subject of the bundle")
	// ErrPayloadType: the DSSE payload is not an in-toto statement.
	ErrPayloadType = errors.New("wrong DSSE payload type")
	// ErrClaimMismatch: a predicate claim disagrees with the certificate.
	ErrClaimMismatch = errors.New("predicate claim contradicts the certificate")
	// ErrNoIdentity: the policy names no signer identity, which the method
	// needs (returned by New, not wrapped in a *StepError).
	ErrNoIdentity = errors.New("no signer identity in the policy")
	// ErrNoIssuer: the sigstore policy names no OIDC issuer (returned by
	// New, not wrapped in a *StepError).
	ErrNoIssuer = errors.New("no OIDC issuer in the policy")
	// ErrPackageMismatch: the statement does not bind a package artifact
	// the policy requires.
	ErrPackageMismatch = errors.New("the statement does not bind the required package")
	// ErrMismatch: the observed definitions differ from the signed ones.
	ErrMismatch = errors.New("the server's definitions do not match the signed statement")
)

// IdentitiesError is the identity failure of a policy with several
// identities, none of which the signer matches: Errs[i] says why identity i
// (of Policy.Identities) did not, each an ErrIdentityMismatch. errors.Is
// matches ErrIdentityMismatch. Names, when set, names the identities in the
// message instead of their index (a caller whose identities are numbered
// otherwise).
type IdentitiesError struct {
	Errs  []error
	Names []string
}

func (e *IdentitiesError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		name := "identity " + strconv.Itoa(i)
		if i < len(e.Names) {
			name = e.Names[i]
		}
		parts[i] = name + ": " + strings.TrimPrefix(err.Error(), ErrIdentityMismatch.Error()+": ")
	}
	return fmt.Sprintf("%v: none of the policy's %d identities matches (%s)", ErrIdentityMismatch, len(e.Errs), strings.Join(parts, "; "))
}

func (e *IdentitiesError) Unwrap() []error { return append([]error{ErrIdentityMismatch}, e.Errs...) }

// sigstoreSteps maps the messages with which sigstore-go v1.3.0's
// (*verify.Verifier).Verify wraps its failures to our steps. The table is
// checked by the tests: a prefix that no longer occurs would show as a
// failure named with the fallback step.
var sigstoreSteps = []struct {
	prefix string
	step   Step
}{
	{"failed to build policy", StepBundle},
	{"failed to verify log inclusion", StepTlog},
	{"failed to verify timestamps", StepTime},
	{"must provide timestamp to verify certificate", StepTime},
	{"signature time outside of public key validity window", StepTime},
	{"failed to fetch verification content", StepBundle},
	{"failed to summarize certificate", StepChain},
	{"failed to verify leaf certificate", StepChain},
	{"failed to verify signed certificate timestamp", StepChain},
	{"SCTs required but bundle is signed with a public key", StepChain},
	{"expected key signature, not certificate", StepSignature},
	{"failed to fetch signature content", StepBundle},
	{"failed to fetch entity version", StepBundle},
	{"failed to get signature verifier", StepSignature},
	{"failed to verify signature", StepSignature},
	{"failed to fetch envelope statement", StepStatement},
	{"can't verify certificate identities", StepIdentity},
	{"failed to verify certificate identity", StepIdentity},
}

// artifactMismatches are the messages of sigstore-go v1.3.0's artifact
// checks, which it makes after the envelope's signature verified (or, for
// a message digest, before the signature is checked with it) and wraps as
// "failed to verify signature": the artifact given is not what was signed,
// which says nothing against the signature.
var artifactMismatches = []string{
	"provided artifact digests do not match digests in statement",
	"provided artifact digests does not match digests in statement",
	"provided artifact digest does not match any digest in statement",
	"no matching artifact hash algorithm found in subject digests",
	"artifact does not match digest",
}

// classify names the step of an error returned by sigstore-go's Verify.
func classify(err error) *StepError {
	msg := err.Error()
	for _, m := range artifactMismatches {
		if inner, ok := strings.CutPrefix(msg, "failed to verify signature: "); ok && inner == m {
			return &StepError{Step: StepMatch, Err: fmt.Errorf("%w: its digest is none of the signed statement's subjects (nor the signed message's digest); the signature itself is not in question (%s)", ErrNotSubject, inner)}
		}
	}
	for _, s := range sigstoreSteps {
		if strings.HasPrefix(msg, s.prefix) {
			return &StepError{Step: s.step, Err: err}
		}
	}
	return &StepError{Step: StepSignature, Err: err}
}
