package sign

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	sigsign "github.com/sigstore/sigstore-go/pkg/sign"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/trustroot"
)

// BundleMediaType is the media type of the bundles Sign makes.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// DefaultTimeout bounds each request to Fulcio, Rekor and a TSA.
const DefaultTimeout = 30 * time.Second

// DefaultRetries is what the CLI sets Options.Retries to: a service answering
// 5xx or 429 is asked again after 1 s, then 2 s.
const DefaultRetries = 2

// Errors of Sign that a caller may need to tell apart.
var (
	// ErrStatement: the payload is not a valid mcpsign statement.
	ErrStatement = errors.New("the payload is not a valid mcpsign statement")
	// ErrConfig: the options cannot make a verifiable bundle (e.g. keyless
	// signing without a transparency log).
	ErrConfig = errors.New("signing configuration")
	// ErrNoTrustedRoot wraps ErrConfig: the signature needs a log entry, a
	// timestamp or a Fulcio certificate, and no trusted material was given
	// to verify the new bundle with.
	ErrNoTrustedRoot = lazy.Wrap(ErrConfig, "a trusted root is needed to verify the new bundle's certificate, log entry and timestamps")
	// ErrSelfCheck: the new bundle did not verify; it is not returned.
	ErrSelfCheck = errors.New("the new bundle does not verify")
	// ErrClaimMismatch: the statement's source claims contradict the
	// Fulcio certificate just issued (every verifier would refuse the
	// bundle); nothing was timestamped or logged. It wraps the
	// *attest.SourceMismatchError naming the claim and the certificate's
	// value.
	ErrClaimMismatch = errors.New("the statement's source claim contradicts the signing certificate")
)

// Service names, as used in ServiceError and Timings.
const (
	ServiceFulcio = "Fulcio"
	ServiceRekor  = "Rekor"
	ServiceTSA    = "timestamp authority"
)

// ServiceError is a failure of one Sigstore service.
type ServiceError struct {
	Service string // ServiceFulcio, ServiceRekor or ServiceTSA
	URL     string
	Err     error
}

func (e *ServiceError) Error() string {
	hint := "check that the service is up and reachable"
	switch e.Service {
	case ServiceFulcio:
		hint += ", the URL in the signing config, and that the identity token is fresh and for this Fulcio"
	case ServiceRekor:
		if strings.Contains(e.Err.Error(), "409") && strings.Contains(e.Err.Error(), "already exists") {
			// Rekor v2 refuses a second copy of an entry, and sigstore-go
			// cannot fetch the first one.
			return fmt.Sprintf("%s at %s already holds this exact signature: %v; an RSA or Ed25519 key signs the same statement identically, so the bundle made the first time stands (keep it), or sign with an ECDSA key, whose signatures differ every time", e.Service, e.URL, e.Err)
		}
		hint += " and the Rekor URL and version"
	case ServiceTSA:
		hint += " and the timestamp authority URL"
	}
	return fmt.Sprintf("%s at %s failed: %v; %s", e.Service, e.URL, e.Err, hint)
}

func (e *ServiceError) Unwrap() error { return e.Err }

// RekorService is one transparency log to write to.
type RekorService struct {
	URL string
	// Version is the Rekor API major version: 1 (logs a dsse entry, with an
	// integrated time) or 2 (rekor-tiles: a hashedrekord over the DSSE PAE,
	// no integrated time).
	Version uint32
}

// Options configure Sign.
type Options struct {
	// Signer is a *KeySigner, *CertificateSigner or *SigstoreSigner.
	Signer Signer
	// TransparencyLogs to write an entry to. The sigstore method needs at
	// least one.
	TransparencyLogs []RekorService
	// TimestampAuthorities are RFC 3161 endpoint URLs to get a signed
	// timestamp of the signature from.
	TimestampAuthorities []string
	// TrustedMaterial verifies the new bundle before Sign returns it: a
	// Sigstore trusted root with the Fulcio CA, the logs and the TSAs used.
	// It may be nil only for the key and certificate methods without a log
	// or TSA; their own key or chain is always added.
	TrustedMaterial root.TrustedMaterial
	// Timeout bounds each service request (DefaultTimeout if zero).
	Timeout time.Duration
	// Retries of a service request answered 5xx or 429.
	Retries uint
	// Transport, if set, carries the Fulcio and TSA requests (tests,
	// instrumentation). Rekor requests use the Rekor clients' own.
	Transport http.RoundTripper
}

// Result is a signed, self-verified bundle and what it proves.
type Result struct {
	// Bundle is the Sigstore bundle JSON, as it should be written.
	Bundle []byte
	// Method of the signature.
	Method evidence.Method
	// Identity is the verified signer: certificate SAN and OIDC issuer
	// (sigstore), subject and SANs (certificate), key hint (key).
	Identity Identity
	// TlogEntries are the verified transparency log entries.
	TlogEntries []TlogEntry
	// Timestamps are the verified signed (TSA) and integrated (Rekor v1)
	// times.
	Timestamps []Timestamp
	// Timings is how long each service took.
	Timings Timings
}

// Identity says who signed.
type Identity struct {
	// SAN is the certificate's subject alternative name (sigstore,
	// certificate).
	SAN string
	// Issuer is the OIDC issuer in a Fulcio certificate.
	Issuer string
	// SANs are all the certificate's subject alternative names (e-mail,
	// URI, DNS, IP), for certificates that have several.
	SANs []string
	// Subject is the certificate subject DN (certificate).
	Subject string
	// KeyHint is the bundle's hint of the public key (key): base64 of the
	// SHA-256 of its DER SubjectPublicKeyInfo.
	KeyHint string
	// KeyID is the same digest as mcpsign names keys everywhere else
	// ("sha256:" and lowercase hex, as evidence.KeyID), when the hint is one.
	KeyID string
	// Certificate is the signing certificate (sigstore, certificate).
	Certificate *x509.Certificate
	// Source is the source repository, commit and ref the Fulcio
	// certificate's extensions vouch for (sigstore; nil when it has none).
	// The statement's source claims agree with it: Sign checked them.
	Source *attest.Source
}

// TlogEntry is a transparency log entry of the bundle: the entry as
// verification reports it (index, hex log ID, integrated time, nil for
// Rekor v2), its kind and whether it has an inclusion proof.
type TlogEntry struct {
	evidence.Tlog
	Kind           string // entry kind and version, e.g. "hashedrekord 0.0.2"
	InclusionProof bool
}

// Timestamp is one verified time of the signature.
type Timestamp struct {
	Kind string    `json:"kind"` // "tsa" or "tlog"
	URI  string    `json:"uri,omitempty"`
	Time time.Time `json:"time"`
}

// Timings is the wall time spent per service.
type Timings struct {
	Fulcio, Rekor, TSA, Verify, Total time.Duration
}

// String says the timings for people, each rounded to 0.1 ms.
func (t Timings) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("Fulcio %s, Rekor %s, timestamp authority %s, verify %s, sign total %s",
		ms(t.Fulcio), ms(t.Rekor), ms(t.TSA), ms(t.Verify), ms(t.Total))
}

// Sign signs payload, an mcpsign statement, into a Sigstore bundle v0.3
// (DSSE, payload type application/vnd.in-toto+json) and verifies the bundle
// with sigstore-go's verifier against opts.TrustedMaterial (plus the
// signer's own key or chain) before returning it. Any failure returns no
// bundle: a *ServiceError names the service that failed.
func Sign(ctx context.Context, payload []byte, opts Options) (*Result, error) {
	start := time.Now()
	st, err := attest.Parse(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStatement, err)
	}
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}

	tr := &stageTracker{}
	timing := &timingTransport{inner: opts.Transport, stats: &tr.tsaTime}
	bopts := sigsign.BundleOptions{Context: ctx}
	var keypair sigsign.Keypair
	switch s := opts.Signer.(type) {
	case *KeySigner:
		keypair = s.keypair
	case *CertificateSigner:
		keypair = s.keypair
		if s.EmbedChain && len(s.intermediates) > 0 {
			bopts.CertificateChainProvider = &staticChain{ders: chainDER(s.leaf, s.intermediates)}
		} else {
			bopts.CertificateProvider = &staticChain{ders: [][]byte{s.leaf.Raw}}
		}
	case *SigstoreSigner:
		kp, err := sigsign.NewEphemeralKeypair(nil)
		if err != nil {
			return nil, fmt.Errorf("ephemeral key: %w", err)
		}
		keypair = kp
		bopts.CertificateProvider = &fulcioProvider{
			inner: sigsign.NewFulcio(&sigsign.FulcioOptions{
				BaseURL: s.fulcioURL, Timeout: opts.Timeout, Retries: opts.Retries, Transport: timing.forService(false),
			}),
			url: s.fulcioURL, tracker: tr, source: st.Predicate.Source,
		}
		bopts.CertificateProviderOptions = &sigsign.CertificateProviderOptions{IDToken: s.token.Raw()}
	}
	for _, u := range opts.TimestampAuthorities {
		bopts.TimestampAuthorities = append(bopts.TimestampAuthorities, sigsign.NewTimestampAuthority(&sigsign.TimestampAuthorityOptions{
			URL: u, Timeout: opts.Timeout, Retries: opts.Retries, Transport: timing.forService(true),
		}))
	}
	for _, l := range opts.TransparencyLogs {
		bopts.TransparencyLogs = append(bopts.TransparencyLogs, &rekorLog{
			inner: sigsign.NewRekor(&sigsign.RekorOptions{
				BaseURL: l.URL, Timeout: opts.Timeout, Retries: opts.Retries, Version: l.Version,
			}),
			url: l.URL, tracker: tr,
		})
	}

	pb, err := sigsign.Bundle(&sigsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, keypair, bopts)
	if err != nil {
		return nil, tr.classify(err, opts)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out, err := marshalBundle(pb)
	if err != nil {
		return nil, err
	}
	verifyStart := time.Now()
	res, err := selfCheck(out, payload, st, opts)
	if err != nil {
		return nil, err
	}
	res.Timings = Timings{
		Fulcio: tr.fulcioTime, Rekor: tr.rekorTime, TSA: tr.tsaTime.total(),
		Verify: time.Since(verifyStart), Total: time.Since(start),
	}
	return res, nil
}

// checkOptions refuses, before anything is signed or sent, options that
// cannot make a bundle that verifies.
func checkOptions(opts *Options) error {
	if opts.Signer == nil {
		return fmt.Errorf("%w: %w", ErrConfig, errNoSigner)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	for _, l := range opts.TransparencyLogs {
		if err := checkServiceURL(ServiceRekor, l.URL); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if l.Version != 1 && l.Version != 2 {
			return fmt.Errorf("%w: Rekor API version %d; want 1 or 2", ErrConfig, l.Version)
		}
		if l.Version == 2 && isEd25519(opts.Signer) {
			return fmt.Errorf("%w: Rekor v2 logs only hashedrekord entries, which need a prehashed signature, and an Ed25519 DSSE signature is not prehashed: sign with an ECDSA or RSA key, or log to a Rekor v1", ErrConfig)
		}
	}
	for _, u := range opts.TimestampAuthorities {
		if err := checkServiceURL(ServiceTSA, u); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if _, ok := opts.Signer.(*SigstoreSigner); ok {
		if len(opts.TransparencyLogs) == 0 {
			return fmt.Errorf("%w: keyless signing needs a transparency log (Rekor): the short-lived certificate is only trustworthy with a logged, timestamped signature", ErrConfig)
		}
		if len(opts.TimestampAuthorities) == 0 {
			for _, l := range opts.TransparencyLogs {
				if l.Version == 2 {
					return fmt.Errorf("%w: Rekor v2 gives no integrated time, so keyless signing with it needs a timestamp authority, and none is configured (add one to the signing config)", ErrConfig)
				}
			}
		}
	}
	needRoot := len(opts.TransparencyLogs) > 0 || len(opts.TimestampAuthorities) > 0
	if _, ok := opts.Signer.(*SigstoreSigner); ok {
		needRoot = true
	}
	if needRoot && opts.TrustedMaterial == nil {
		return ErrNoTrustedRoot
	}
	return nil
}

// selfCheck verifies the bundle as a verifier would and reads what it
// proves. The bundle is re-read from its JSON, so what is checked is what
// will be written.
func selfCheck(bundleJSON, payload []byte, st *attest.Statement, opts Options) (*Result, error) {
	var loadOpts []bundle.Option
	if cs, ok := opts.Signer.(*CertificateSigner); ok && cs.EmbedChain {
		loadOpts = append(loadOpts, bundle.AllowCertificateChain())
	}
	b := &bundle.Bundle{Bundle: new(protobundle.Bundle)}
	if err := protojson.Unmarshal(bundleJSON, b.Bundle); err != nil {
		return nil, fmt.Errorf("%w: re-reading it: %w", ErrSelfCheck, err)
	}
	nb, err := bundle.NewBundle(b.Bundle, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: re-reading it: %w", ErrSelfCheck, err)
	}

	var trusted root.TrustedMaterialCollection
	if opts.TrustedMaterial != nil {
		if _, keyless := opts.Signer.(*SigstoreSigner); keyless {
			trusted = append(trusted, opts.TrustedMaterial)
		} else {
			// Only the logs and TSAs: a key or enterprise signature must
			// not pass on the strength of a Fulcio CA.
			trusted = append(trusted, trustroot.LogsAndTimestamps(opts.TrustedMaterial))
		}
	}
	var vopts []sgverify.VerifierOption
	nLogs, nTSA := len(opts.TransparencyLogs), len(opts.TimestampAuthorities)
	if nLogs > 0 {
		vopts = append(vopts, sgverify.WithTransparencyLog(nLogs))
	}
	if nTSA > 0 {
		vopts = append(vopts, sgverify.WithSignedTimestamps(nTSA))
	}
	v1Logs := 0
	for _, l := range opts.TransparencyLogs {
		if l.Version == 1 {
			v1Logs++
		}
	}
	policyOpts := []sgverify.PolicyOption{sgverify.WithoutIdentitiesUnsafe()}
	switch s := opts.Signer.(type) {
	case *KeySigner:
		km, err := s.trustedKey()
		if err != nil {
			return nil, err
		}
		trusted = append(trusted, km)
		policyOpts = []sgverify.PolicyOption{sgverify.WithKey()}
		if v1Logs > 0 && nTSA == 0 {
			vopts = append(vopts, sgverify.WithIntegratedTimestamps(v1Logs))
		}
		if nTSA == 0 && v1Logs == 0 {
			vopts = append(vopts, sgverify.WithNoObserverTimestamps())
		}
	case *CertificateSigner:
		trusted = append(trusted, s.trustedCA())
		if v1Logs > 0 && nTSA == 0 {
			vopts = append(vopts, sgverify.WithIntegratedTimestamps(v1Logs))
		}
		if nTSA == 0 && v1Logs == 0 {
			vopts = append(vopts, sgverify.WithCurrentTime())
		}
	case *SigstoreSigner:
		if len(opts.TrustedMaterial.CTLogs()) > 0 {
			vopts = append(vopts, sgverify.WithSignedCertificateTimestamps(1))
		}
		if nTSA == 0 {
			vopts = append(vopts, sgverify.WithIntegratedTimestamps(v1Logs))
		}
	}
	verifier, err := sgverify.NewVerifier(trusted, vopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSelfCheck, err)
	}
	first, _ := hex.DecodeString(st.Subject[0].Digest["sha256"])
	vr, err := verifier.Verify(nb, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", first), policyOpts...))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSelfCheck, err)
	}
	env := nb.GetDsseEnvelope()
	if env == nil || !bytes.Equal(env.Payload, payload) || env.PayloadType != attest.PayloadType {
		return nil, fmt.Errorf("%w: the envelope does not hold the statement that was signed", ErrSelfCheck)
	}
	return describe(nb, vr, bundleJSON, opts.Signer)
}

func describe(nb *bundle.Bundle, vr *sgverify.VerificationResult, bundleJSON []byte, s Signer) (*Result, error) {
	res := &Result{Bundle: bundleJSON, Method: s.Method()}
	vc, err := nb.VerificationContent()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSelfCheck, err)
	}
	if c := vc.Certificate(); c != nil {
		res.Identity.Certificate = c
		res.Identity.Subject = dn.String(c.RawSubject)
	}
	if vr.Signature != nil && vr.Signature.Certificate != nil {
		res.Identity.SAN = vr.Signature.Certificate.SubjectAlternativeName
		res.Identity.Issuer = vr.Signature.Certificate.Issuer
	}
	if c := res.Identity.Certificate; c != nil {
		res.Identity.SANs = allSANs(c)
		if res.Identity.SAN == "" && len(res.Identity.SANs) > 0 {
			res.Identity.SAN = res.Identity.SANs[0]
		}
	}
	if _, keyless := s.(*SigstoreSigner); keyless && res.Identity.Certificate != nil {
		if res.Identity.Source, err = certificateSource(res.Identity.Certificate); err != nil {
			return nil, fmt.Errorf("%w: reading the certificate's extensions: %w", ErrSelfCheck, err)
		}
	}
	if pk := vc.PublicKey(); pk != nil {
		res.Identity.KeyHint = string(pk.Hint())
		res.Identity.KeyID, _ = evidence.KeyIDOfHint(res.Identity.KeyHint)
	}
	entries, err := nb.TlogEntries()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSelfCheck, err)
	}
	for _, e := range entries {
		te := TlogEntry{
			Tlog:           evidence.Tlog{LogIndex: e.LogIndex(), LogID: hex.EncodeToString([]byte(e.LogKeyID()))},
			Kind:           entryKind(e.TransparencyLogEntry()),
			InclusionProof: e.HasInclusionProof(),
		}
		if t := e.IntegratedTime(); !t.IsZero() && t.Unix() > 0 {
			t = t.UTC()
			te.IntegratedTime = &t
		}
		res.TlogEntries = append(res.TlogEntries, te)
	}
	for _, t := range vr.VerifiedTimestamps {
		var kind string
		switch t.Type {
		case "Tlog":
			kind = "tlog"
		case "TimestampAuthority":
			kind = "tsa"
		default: // "CurrentTime": no trusted time in the bundle
			continue
		}
		res.Timestamps = append(res.Timestamps, Timestamp{Kind: kind, URI: t.URI, Time: t.Timestamp})
	}
	return res, nil
}

func entryKind(tle *protorekor.TransparencyLogEntry) string {
	if kv := tle.GetKindVersion(); kv != nil {
		return kv.GetKind() + " " + kv.GetVersion()
	}
	return ""
}

func allSANs(c *x509.Certificate) []string {
	out := append([]string{}, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	out = append(out, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// marshalBundle returns the bundle as indented JSON (protojson's own output
// is deliberately unstable in its whitespace).
func marshalBundle(pb *protobundle.Bundle) ([]byte, error) {
	raw, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("encoding the bundle: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("encoding the bundle: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func chainDER(leaf *x509.Certificate, inter []*x509.Certificate) [][]byte {
	out := [][]byte{leaf.Raw}
	for _, c := range inter {
		out = append(out, c.Raw)
	}
	return out
}

// staticChain provides a certificate (chain) the signer already has.
type staticChain struct{ ders [][]byte }

func (s *staticChain) GetCertificate(context.Context, sigsign.Keypair, *sigsign.CertificateProviderOptions) ([]byte, error) {
	return s.ders[0], nil
}

func (s *staticChain) GetCertificateChain(context.Context, sigsign.Keypair, *sigsign.CertificateProviderOptions) ([][]byte, error) {
	return s.ders, nil
}

// stageTracker follows sigstore-go's sign.Bundle through its stages (sign,
// certificate, timestamps, transparency logs, in that order) to name the
// service an error came from, and times each.
type stageTracker struct {
	mu         sync.Mutex
	fulcioDone bool
	rekorBegun bool
	fulcioTime time.Duration
	rekorTime  time.Duration
	tsaTime    durations
}

// classify turns a sign.Bundle error into a ServiceError when it came from
// a timestamp authority (the only service sigstore-go calls directly).
func (t *stageTracker) classify(err error, opts Options) error {
	var se *ServiceError
	if errors.As(err, &se) || errors.Is(err, ErrClaimMismatch) {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, keyless := opts.Signer.(*SigstoreSigner)
	if len(opts.TimestampAuthorities) > 0 && !t.rekorBegun && (t.fulcioDone || !keyless) {
		return &ServiceError{Service: ServiceTSA, URL: strings.Join(opts.TimestampAuthorities, ", "), Err: err}
	}
	return fmt.Errorf("signing: %w", err)
}

// fulcioProvider names and times Fulcio, and checks the statement's source
// claims against the certificate it issues before sigstore-go goes on to
// the timestamp authorities and the logs.
type fulcioProvider struct {
	inner   sigsign.CertificateProvider
	url     string
	tracker *stageTracker
	// source is the statement's source claim (nil: none).
	source *attest.Source
}

func (f *fulcioProvider) GetCertificate(ctx context.Context, kp sigsign.Keypair, o *sigsign.CertificateProviderOptions) ([]byte, error) {
	start := time.Now()
	der, err := f.inner.GetCertificate(ctx, kp, o)
	f.tracker.mu.Lock()
	f.tracker.fulcioTime += time.Since(start)
	f.tracker.fulcioDone = err == nil
	f.tracker.mu.Unlock()
	if err != nil {
		return nil, &ServiceError{Service: ServiceFulcio, URL: f.url, Err: err}
	}
	if err := checkSourceClaims(der, f.source); err != nil {
		return nil, err
	}
	return der, nil
}

// checkSourceClaims compares the statement's source claims with the Fulcio
// source extensions (1.3.6.1.4.1.57264.1.12–.14) of the certificate der,
// as every verifier will (docs/SIGNING.md): a contradiction wraps
// ErrClaimMismatch and attest.ErrSourceMismatch.
func checkSourceClaims(der []byte, claimed *attest.Source) error {
	if claimed == nil {
		return nil
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("%w: reading the certificate: %w", ErrSelfCheck, err)
	}
	vouched, err := certificateSource(c)
	if err != nil {
		return fmt.Errorf("%w: reading the certificate's extensions: %w", ErrSelfCheck, err)
	}
	if err := attest.CheckSource(claimed, vouched); err != nil {
		return fmt.Errorf("%w: %w; nothing was timestamped, logged or written: correct or drop the claim", ErrClaimMismatch, err)
	}
	return nil
}

// rekorLog names and times a transparency log.
type rekorLog struct {
	inner   sigsign.Transparency
	url     string
	tracker *stageTracker
}

func (r *rekorLog) GetTransparencyLogEntry(ctx context.Context, keyOrCertPEM []byte, b *protobundle.Bundle) error {
	r.tracker.mu.Lock()
	r.tracker.rekorBegun = true
	r.tracker.mu.Unlock()
	start := time.Now()
	err := r.inner.GetTransparencyLogEntry(ctx, keyOrCertPEM, b)
	r.tracker.mu.Lock()
	r.tracker.rekorTime += time.Since(start)
	r.tracker.mu.Unlock()
	if err != nil {
		return &ServiceError{Service: ServiceRekor, URL: r.url, Err: err}
	}
	return nil
}

// durations sums request times safely.
type durations struct {
	mu  sync.Mutex
	sum time.Duration
}

func (d *durations) add(x time.Duration) {
	d.mu.Lock()
	d.sum += x
	d.mu.Unlock()
}

func (d *durations) total() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sum
}

// timingTransport times the TSA's HTTP requests.
type timingTransport struct {
	inner http.RoundTripper
	stats *durations
}

// forService returns the transport for a service: timed for the TSA.
func (t *timingTransport) forService(timed bool) http.RoundTripper {
	inner := t.inner
	if inner == nil {
		inner = http.DefaultTransport
	}
	if !timed {
		return inner
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := inner.RoundTrip(req)
		t.stats.add(time.Since(start))
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// certificateSource returns what the Fulcio source extensions of c vouch
// for, nil when it has none.
func certificateSource(c *x509.Certificate) (*attest.Source, error) {
	e, err := certificate.ParseExtensions(c.Extensions)
	if err != nil {
		return nil, err
	}
	src := attest.Source{Repository: e.SourceRepositoryURI, Commit: e.SourceRepositoryDigest, Ref: e.SourceRepositoryRef}
	if src == (attest.Source{}) {
		return nil, nil
	}
	return &src, nil
}
