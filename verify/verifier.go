package verify

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Verifier checks bundles against one trust and one policy. It is safe for
// concurrent use and meant to be reused: build it once per trusted root and
// policy.
type Verifier struct {
	policy Policy
	trust  root.TrustedMaterial
	ids    []*matcher // one per Policy.Identities (one empty for none)
	keyID  string
	// logsAndTSAs: the trust has a Sigstore trusted root (logs, TSAs).
	logsAndTSAs bool
	// sigstore is that trusted root (nil: none), for Explain.
	sigstore root.TrustedMaterial
	// sigstore-go verifiers, indexed by [lite]: lite ones leave the
	// statement's predicate unparsed (Verify parses it itself, strictly).
	timed   [2]*sgverify.Verifier // the time comes from the policy or the bundle's timestamps
	current [2]*sgverify.Verifier // certificate method, no timestamp: the current time
}

func newSigstoreVerifiers(tm root.TrustedMaterial, opts ...sgverify.VerifierOption) ([2]*sgverify.Verifier, error) {
	var out [2]*sgverify.Verifier
	var err error
	if out[0], err = sgverify.NewVerifier(tm, opts...); err != nil {
		return out, err
	}
	out[1], err = sgverify.NewVerifier(tm, append(opts, sgverify.WithoutStatementPredicate())...)
	return out, err
}

// New returns a Verifier for policy p over trust t. It fails, as a usage
// error (not a *StepError), when the policy is incomplete or contradicts
// itself, or the trust lacks what the method needs.
func New(t Trust, p Policy) (*Verifier, error) {
	if !p.Method.Valid() {
		return nil, fmt.Errorf("unknown verification method %s (want sigstore, key or certificate)", textsafe.RawQuote(string(p.Method)))
	}
	ids, err := compileIdentities(p.Method, p.Identities)
	if err != nil {
		return nil, err
	}
	for i, r := range p.Packages {
		if len(r.Digests) == 0 {
			return nil, fmt.Errorf("required package %d (%s) has no digest", i, r.Name)
		}
		for alg, h := range r.Digests {
			if _, err := hex.DecodeString(h); err != nil || h == "" || strings.ToLower(h) != h || strings.ToLower(alg) != alg {
				return nil, fmt.Errorf("required package %d (%s): digest %s:%s is not a lowercase algorithm and lowercase hex", i, r.Name, alg, h)
			}
		}
	}
	v := &Verifier{policy: p, ids: ids, logsAndTSAs: t.Sigstore != nil, sigstore: t.Sigstore}
	var opts []sgverify.VerifierOption
	switch p.Method {
	case MethodSigstore:
		if t.Sigstore == nil {
			return nil, errors.New("the sigstore method needs a Sigstore trusted root")
		}
		if p.PublicKey != nil || len(t.CertificateAuthorities) > 0 {
			return nil, errors.New("the sigstore method takes no public key and no enterprise CA: its trust is the Sigstore trusted root")
		}
		if p.AllowCurrentTime {
			return nil, errors.New("the sigstore method always needs a verified signing time: short-lived certificates cannot be checked at the current time")
		}
		v.trust = t.Sigstore
		opts = append(opts,
			sgverify.WithSignedCertificateTimestamps(1),
			sgverify.WithTransparencyLog(1),
			sgverify.WithObserverTimestamps(1))
		if p.RequireTimestamp {
			opts = append(opts, sgverify.WithSignedTimestamps(1))
		}
	case MethodKey:
		if p.PublicKey == nil {
			return nil, errors.New("the key method needs the signer's public key")
		}
		if len(t.CertificateAuthorities) > 0 {
			return nil, errors.New("the key method takes no certificate authority")
		}
		if p.AllowCurrentTime {
			return nil, errors.New("the key method checks no certificate: allowing the current time means nothing for it")
		}
		if (p.RequireTlog || p.RequireTimestamp) && t.Sigstore == nil {
			return nil, errors.New("requiring a log entry or a timestamp needs a Sigstore trusted root with the logs and timestamp authorities")
		}
		km, err := keyMaterial(p.PublicKey)
		if err != nil {
			return nil, err
		}
		if v.keyID, err = KeyID(p.PublicKey); err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		v.trust = root.TrustedMaterialCollection{km}
		if t.Sigstore != nil {
			v.trust = root.TrustedMaterialCollection{km, withoutCAs{t.Sigstore}}
		}
		if p.RequireTlog {
			opts = append(opts, sgverify.WithTransparencyLog(1))
		}
		if p.RequireTimestamp {
			opts = append(opts, sgverify.WithSignedTimestamps(1))
		} else {
			opts = append(opts, sgverify.WithNoObserverTimestamps())
		}
	case MethodCertificate:
		if len(t.CertificateAuthorities) == 0 {
			return nil, errors.New("the certificate method needs the enterprise root (and intermediate) certificates to trust")
		}
		if p.PublicKey != nil {
			return nil, errors.New("the certificate method takes no public key")
		}
		if (p.RequireTlog || p.RequireTimestamp) && t.Sigstore == nil {
			return nil, errors.New("requiring a log entry or a timestamp needs a Sigstore trusted root with the logs and timestamp authorities")
		}
		cas := &caMaterial{cas: t.CertificateAuthorities}
		v.trust = root.TrustedMaterialCollection{cas}
		if t.Sigstore != nil {
			v.trust = root.TrustedMaterialCollection{cas, withoutCAs{t.Sigstore}}
		}
		if p.RequireTlog {
			opts = append(opts, sgverify.WithTransparencyLog(1))
		}
		switch {
		case p.RequireTimestamp:
			opts = append(opts, sgverify.WithSignedTimestamps(1))
		default:
			// A log's signed entry timestamp or an RFC 3161 timestamp.
			opts = append(opts, sgverify.WithObserverTimestamps(1))
		}
		if p.AllowCurrentTime && !p.RequireTlog && !p.RequireTimestamp {
			v.current, err = newSigstoreVerifiers(v.trust, sgverify.WithCurrentTime())
			if err != nil {
				return nil, err
			}
		}
	}
	v.timed, err = newSigstoreVerifiers(v.trust, opts...)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Policy returns the verifier's policy.
func (v *Verifier) Policy() Policy { return v.policy }

// Artifact is what a generic bundle was signed over: the artifact's bytes,
// or its digest. For a DSSE bundle it must be one of the statement's
// subjects; for a message signature, the signed message.
type Artifact struct {
	// Reader streams the artifact. Exactly one of Reader and Digest.
	Reader io.Reader
	// Digest and DigestAlgorithm ("sha256", "sha384" or "sha512") name it
	// by digest instead.
	Digest          []byte
	DigestAlgorithm string
}

// Verify checks a bundle of an mcpsign statement against the definitions a
// server serves now (snap), in the steps of docs/VERIFY.md: bundle,
// signature, chain, tlog, time, identity, statement and match.
//
// It returns a Result whenever the bundle parses, with every check made so
// far; the Result is Verified only when err is nil. A failure is a
// *StepError naming its step. A nil snap is refused: a statement is never
// verified without what it must match.
func (v *Verifier) Verify(ctx context.Context, bundleJSON []byte, snap *digest.Snapshot) (*Result, error) {
	if snap == nil {
		return nil, errors.New("no snapshot to match the statement against")
	}
	res, st, err := v.verifyStatement(ctx, bundleJSON)
	if err != nil {
		return res, err
	}
	// Match: every name and digest, both ways, and the instructions.
	res.Observed = &snap.Server
	res.Definitions, res.Instructions, err = match(st, snap)
	if err != nil {
		return res, &StepError{Step: StepMatch, Err: err}
	}
	res.Verified = true
	return res, nil
}

// VerifyStatement checks a bundle of an mcpsign statement without the
// definitions it signs: every step of Verify but match. A caller that
// holds no server's definitions (a registry entry, a statement checked for
// its subjects and predicate alone) checks what Result.Statement binds
// itself. The Result is Verified when err is nil; its Definitions and
// Observed are empty: nothing was matched.
func (v *Verifier) VerifyStatement(ctx context.Context, bundleJSON []byte) (*Result, error) {
	res, _, err := v.verifyStatement(ctx, bundleJSON)
	if err != nil {
		return res, err
	}
	res.Verified = true
	return res, nil
}

// verifyStatement is Verify up to the statement step, returning the
// parsed statement.
func (v *Verifier) verifyStatement(ctx context.Context, bundleJSON []byte) (*Result, *attest.Statement, error) {
	res, b, err := v.verifySigstore(ctx, bundleJSON, nil)
	if err != nil {
		return res, nil, err
	}
	if err := ctx.Err(); err != nil {
		return res, nil, err
	}
	// Statement: payload type, strict in-toto v1 with our predicate,
	// well-formed unique subjects, embedded definitions equal to them.
	env, err := b.Envelope()
	if err != nil {
		return res, nil, stepErr(StepStatement, "the bundle holds a message signature, not a DSSE envelope with a statement")
	}
	raw := env.RawEnvelope()
	if raw.PayloadType != attest.PayloadType {
		return res, nil, &StepError{Step: StepStatement, Err: fmt.Errorf("%w: %s, want %s", ErrPayloadType, textsafe.RawQuote(raw.PayloadType), textsafe.RawQuote(attest.PayloadType))}
	}
	payload, err := raw.DecodeB64Payload()
	if err != nil {
		return res, nil, stepErr(StepStatement, "DSSE payload: %w", err)
	}
	st, err := attest.Parse(payload)
	if err != nil {
		return res, nil, &StepError{Step: StepStatement, Err: err}
	}
	res.Statement = st
	res.Server = st.Predicate.Server
	res.ProtocolVersion = st.Predicate.ProtocolVersion
	res.CertificateSource = vouchedSource(res.Certificate, v.policy.Method == MethodSigstore)
	res.Claims, err = checkClaims(st, res.Certificate, v.policy.Method == MethodSigstore)
	if err != nil {
		return res, nil, &StepError{Step: StepStatement, Err: err}
	}
	if err := checkPackages(st, v.policy.Packages, res.Claims); err != nil {
		return res, nil, &StepError{Step: StepStatement, Err: err}
	}
	return res, st, nil
}

// VerifyBundle is the generic Sigstore bundle check (message signatures and
// DSSE envelopes), as the sigstore-conformance verify protocol runs it: the
// signature, chain, log, time and identity steps, and the artifact (or its
// digest) among the signed subjects or equal to the signed message. It
// binds no subject names and parses no mcpsign statement.
func (v *Verifier) VerifyBundle(ctx context.Context, bundleJSON []byte, a Artifact) (*Result, error) {
	var ap sgverify.ArtifactPolicyOption
	switch {
	case a.Reader != nil && a.Digest == nil:
		ap = sgverify.WithArtifact(a.Reader)
	case a.Reader == nil && a.Digest != nil:
		alg := a.DigestAlgorithm
		if alg == "" {
			alg = "sha256"
		}
		ap = sgverify.WithArtifactDigest(alg, a.Digest)
	default:
		return nil, errors.New("give the artifact or its digest, not both or neither")
	}
	res, _, err := v.verifySigstore(ctx, bundleJSON, ap)
	if err != nil {
		return res, err
	}
	res.Verified = true
	return res, nil
}

// verifySigstore runs the bundle, signature, chain, tlog, time and
// identity steps. A nil ap means an mcpsign statement: a DSSE envelope whose
// subjects the caller binds.
func (v *Verifier) verifySigstore(ctx context.Context, bundleJSON []byte, ap sgverify.ArtifactPolicyOption) (*Result, *bundle.Bundle, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	b, err := ParseBundle(bundleJSON, v.policy.Method == MethodCertificate)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Method: v.policy.Method, BundleDigest: BundleDigest(bundleJSON), BundleMediaType: b.GetMediaType()}
	statement := ap == nil
	if statement {
		if b.GetDsseEnvelope() == nil {
			return res, nil, stepErr(StepStatement, "the bundle holds a message signature, not a DSSE envelope with an mcpsign statement")
		}
		ap = sgverify.WithoutArtifactUnsafe()
	}
	pb := newParsedBundle(b)
	vc, err := pb.VerificationContent()
	if err != nil {
		return res, nil, stepErr(StepBundle, "verification material: %w", err)
	}
	leaf := vc.Certificate()
	switch {
	case leaf != nil && v.policy.Method == MethodKey:
		return res, nil, stepErr(StepSignature, "the bundle is signed with a certificate, but the policy names a public key")
	case leaf == nil && v.policy.Method != MethodKey:
		return res, nil, stepErr(StepChain, "the bundle is signed with a bare public key, but the %s method needs a certificate", v.policy.Method)
	case leaf != nil:
		if err := checkLeaf(leaf); err != nil {
			return res, nil, &StepError{Step: StepChain, Err: err}
		}
	}
	var entity sgverify.SignedEntity = pb
	if leaf != nil && v.policy.Method == MethodCertificate {
		if entity, err = summarizable(pb, leaf); err != nil {
			return res, nil, &StepError{Step: StepIdentity, Err: fmt.Errorf("%w: %w", ErrIdentityMismatch, err)}
		}
	}

	lite := 0
	if statement {
		lite = 1
	}
	sv := v.timed[lite]
	if v.current[0] != nil {
		ts, err := b.Timestamps()
		if err != nil {
			return res, nil, stepErr(StepBundle, "timestamps: %w", err)
		}
		if len(ts) == 0 {
			sv = v.current[lite]
		}
	} else if v.policy.Method == MethodCertificate && !v.policy.RequireTlog && !v.policy.RequireTimestamp {
		if ts, err := b.Timestamps(); err == nil && len(ts) == 0 {
			return res, nil, &StepError{Step: StepTime, Err: fmt.Errorf("%w; require a log entry, or allow checking the certificate at the current time", ErrNoTimestamp)}
		}
	}
	if v.policy.Method == MethodCertificate && !v.logsAndTSAs {
		if ts, err := b.Timestamps(); err == nil && len(ts) > 0 {
			return res, nil, &StepError{Step: StepTime, Err: ErrTimestampNoRoot}
		}
	}

	pol := []sgverify.PolicyOption{sgverify.WithoutIdentitiesUnsafe()}
	if v.policy.Method == MethodKey {
		pol = []sgverify.PolicyOption{sgverify.WithKey()}
	}
	vr, err := sv.Verify(entity, sgverify.NewPolicy(ap, pol...))
	if err != nil {
		se := classify(err)
		// sigstore-go fetches the statement after the signature verified:
		// an envelope of another payload type fails there.
		if env := b.GetDsseEnvelope(); se.Step == StepStatement && env != nil && env.GetPayloadType() != attest.PayloadType {
			se.Err = fmt.Errorf("%w: %s, want %s", ErrPayloadType, textsafe.RawQuote(env.GetPayloadType()), textsafe.RawQuote(attest.PayloadType))
		}
		return res, nil, se
	}
	res.Sigstore = vr
	res.Timestamps = vr.VerifiedTimestamps
	res.SigningTime, res.TimeSource = signingTime(vr.VerifiedTimestamps)
	if v.policy.RequireTlog || v.policy.Method == MethodSigstore {
		if res.Tlog, err = tlogEvidence(pb, v.trust, vr.VerifiedTimestamps, v.policy.Method == MethodSigstore); err != nil {
			return res, nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return res, nil, err
	}

	// Identity, matched on the certificate's own encoding (sigstore-go's
	// summary keeps one SAN, and a URI only as Go re-serializes it).
	switch v.policy.Method {
	case MethodKey:
		res.Identity, res.SignerKeyID = v.keyID, v.keyID
	default:
		if res.SignerKeyID, err = KeyID(leaf.PublicKey); err != nil {
			return res, nil, &StepError{Step: StepIdentity, Err: fmt.Errorf("the signing certificate's public key: %w", err)}
		}
		s := vr.Signature.Certificate
		res.Certificate = s
		if v.policy.Method == MethodCertificate {
			res.Subject = dn.String(leaf.RawSubject)
			res.Issuer = dn.String(leaf.RawIssuer)
		}
		got, first, err := v.matchIdentities(leaf, *s, res)
		if got.issuer != "" {
			res.Issuer = got.issuer
		}
		if err != nil {
			if s.SubjectAlternativeName == unsummarizedSAN {
				s.SubjectAlternativeName = ""
			}
			return res, nil, &StepError{Step: StepIdentity, Err: err}
		}
		// The summary names the SAN that matched, as the result does.
		s.SubjectAlternativeName, s.Issuer = got.identity, got.issuer
		res.Identity = got.identity
		if res.Identity == "" {
			res.Identity = res.Subject
		}
		if v.policy.Method == MethodSigstore {
			ci := v.ids[first].sigstore
			vr.VerifiedIdentity = &ci
		}
	}
	return res, b, nil
}

// matchIdentities matches the signing certificate against every identity
// of the policy (any of them): it records in res the indices of those it
// satisfies, and returns what the first established and its index. With
// several identities and none satisfied, the error is an
// *IdentitiesError.
func (v *Verifier) matchIdentities(leaf *x509.Certificate, s certificate.Summary, res *Result) (matched, int, error) {
	var got matched
	first := -1
	var errs []error
	for i, m := range v.ids {
		g, err := m.verifyCert(v.policy.Method, leaf, s)
		if err != nil {
			if !errors.Is(err, ErrIdentityMismatch) {
				return g, -1, err // the certificate itself, whatever the identity
			}
			if errs == nil {
				got = g
			}
			errs = append(errs, err)
			continue
		}
		if first < 0 {
			got, first = g, i
		}
		res.MatchedIdentities = append(res.MatchedIdentities, i)
	}
	switch {
	case first >= 0:
		return got, first, nil
	case len(errs) == 1:
		return got, -1, errs[0]
	}
	return got, -1, &IdentitiesError{Errs: errs}
}

// signingTime returns the earliest verified time and its source.
func signingTime(ts []sgverify.TimestampVerificationResult) (time.Time, string) {
	var t time.Time
	src := ""
	for _, x := range ts {
		if t.IsZero() || x.Timestamp.Before(t) {
			t, src = x.Timestamp, x.Type
		}
	}
	return t, src
}

// MaxLogIndex is the largest log index a verified log entry may have: 2^53−1,
// the largest integer that every JSON reader (and the lock, read by the
// strict reader) holds exactly.
const MaxLogIndex = 1<<53 - 1

// tlogEvidence returns the first log entry of the bundle that sigstore-go
// verifies: each entry is verified on its own with sigstore-go's
// VerifyTlogEntry, against the same trusted material, since its result for
// the bundle (a threshold met, log timestamps with a time and a URL only)
// does not say which entry passed, and it skips an entry whose signed entry
// timestamp fails: a copied entry from a trusted log with a garbage SET,
// placed first, must not become the evidence. The integrated time is
// reported only when a signed entry timestamp vouches for it and
// sigstore-go returned it as a verified log timestamp (Rekor v2 gives none).
// A Rekor v1 entry without a signed entry timestamp is not evidence: nothing
// vouches for its log index. No entry that verifies on its own and has a
// vouched-for log index, or such an index beyond MaxLogIndex, is a StepTlog
// failure.
//
// verified says that sigstore-go's Verify, which succeeded, made that very
// call on the whole bundle (threshold 1, log times trusted, the same
// material: the sigstore method). A bundle with one entry (sigstore-go
// refuses duplicates) then has it verified already, and its verified log
// timestamps are that entry's: the call is not made twice.
func tlogEvidence(b *parsedBundle, tm root.TrustedMaterial, ts []sgverify.TimestampVerificationResult, verified bool) (*TlogEvidence, error) {
	entries, err := b.TlogEntries()
	if err != nil {
		return nil, stepErr(StepTlog, "log entries: %w", err)
	}
	unsigned := false
	for _, e := range entries {
		var logTimes []root.Timestamp
		if verified && len(entries) == 1 {
			for _, x := range ts {
				if x.Type == "Tlog" {
					logTimes = append(logTimes, root.Timestamp{Time: x.Timestamp, URI: x.URI})
				}
			}
		} else if logTimes, err = sgverify.VerifyTlogEntry(oneEntry{b, e}, tm, 1, true); err != nil {
			continue
		}
		// What vouches for the log index: a Rekor v2 inclusion proof is
		// computed over it; a Rekor v1 one only over the index in its
		// shard's tree, and only the signed entry timestamp covers the
		// entry's (global) log index.
		if !e.IsRekorV2() && !e.HasInclusionPromise() {
			unsigned = true
			continue
		}
		if e.LogIndex() > MaxLogIndex {
			return nil, &StepError{Step: StepTlog, Err: fmt.Errorf("%w: %d is more than 2^53-1, the largest a lock holds", ErrLogIndex, e.LogIndex())}
		}
		ev := &TlogEvidence{LogIndex: e.LogIndex(), LogID: hex.EncodeToString([]byte(e.LogKeyID()))}
		if len(logTimes) > 0 && e.HasInclusionPromise() {
			t := logTimes[0].Time.UTC()
			if slices.ContainsFunc(ts, func(x sgverify.TimestampVerificationResult) bool {
				return x.Type == "Tlog" && x.Timestamp.Equal(t)
			}) {
				ev.IntegratedTime = &t
			}
		}
		return ev, nil
	}
	if unsigned {
		return nil, &StepError{Step: StepTlog, Err: fmt.Errorf("%w: no verified entry's log index is vouched for (a Rekor v1 entry needs its signed entry timestamp)", ErrLogIndex)}
	}
	return nil, stepErr(StepTlog, "no transparency log entry of the bundle verifies on its own against the trusted logs")
}

// oneEntry is a bundle with one of its log entries only, for verifying
// that entry alone.
type oneEntry struct {
	*parsedBundle
	entry *tlog.Entry
}

func (o oneEntry) TlogEntries() ([]*tlog.Entry, error) { return []*tlog.Entry{o.entry}, nil }

// withoutCAs hides the Fulcio CAs and CT logs of a Sigstore trusted root:
// for the key and certificate methods it supplies only logs and timestamp
// authorities.
type withoutCAs struct{ root.TrustedMaterial }

func (withoutCAs) FulcioCertificateAuthorities() []root.CertificateAuthority { return nil }
func (withoutCAs) CTLogs() map[string]*root.TransparencyLog                  { return nil }
func (withoutCAs) PublicKeyVerifier(string) (root.TimeConstrainedVerifier, error) {
	return nil, errors.New("no public keys")
}

// caMaterial offers enterprise CAs where sigstore-go looks for Fulcio's.
type caMaterial struct {
	root.BaseTrustedMaterial
	cas []root.CertificateAuthority
}

func (c *caMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority { return c.cas }

// keyMaterial trusts one public key, whatever key hint the bundle gives,
// with no validity window (as cosign does).
func keyMaterial(pub crypto.PublicKey) (root.TrustedMaterial, error) {
	sv, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	k := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return k, nil }), nil
}
