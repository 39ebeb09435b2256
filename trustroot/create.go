package trustroot

import (
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// CreateOptions describe the trusted material of a Sigstore deployment, as
// PEM files give it, for Create.
type CreateOptions struct {
	// CertificateAuthorities are Fulcio (or other code-signing) CA chains.
	CertificateAuthorities []Authority
	// TransparencyLogs are Rekor logs (v1, or v2 with Origin).
	TransparencyLogs []Log
	// CTLogs are certificate transparency logs.
	CTLogs []Log
	// TimestampAuthorities are RFC 3161 timestamping authorities.
	TimestampAuthorities []Authority
}

// Authority is a certificate authority or a timestamping authority.
type Authority struct {
	// ChainPEM holds the chain, the certificate closest to the signer
	// first and the root last: for a CA, intermediates then root; for a
	// TSA, the signing (leaf) certificate, intermediates, root.
	ChainPEM []byte
	// URI is the service URL (informational for verification).
	URI string
	// Start and End bound the times at which the authority is trusted;
	// a zero Start means the NotBefore of the root certificate (CA) or of
	// the signing certificate (TSA), as cosign's trusted-root create; a
	// zero End an open end.
	Start, End time.Time
}

// Log is a transparency log or a CT log.
type Log struct {
	// KeyPEM is the log's PEM public key (PKIX).
	KeyPEM []byte
	// BaseURL is the log's URL. For a Rekor v2 log its host name must be
	// the checkpoint origin: sigstore-go verifies checkpoints under
	// url.Parse(BaseURL).Hostname().
	BaseURL string
	// Origin is the checkpoint origin of a Rekor v2 log. With it the log
	// id is the C2SP signed-note key hash of (Origin, key); without it,
	// the SHA-256 of the DER public key (Rekor v1 and CT logs).
	Origin string
	// Start and End bound the times at which the key is trusted; a zero
	// Start means the Unix epoch (as cosign's trusted-root create), a
	// zero End an open end.
	Start, End time.Time
}

// Create builds a trusted_root.json (media type
// application/vnd.dev.sigstore.trustedroot+json;version=0.1) from opts, with
// sigstore-go's own serialization, and checks that it parses back. Every
// chain must link (each certificate signed by the next), a CA chain must end
// in a CA certificate, a TSA chain must start with a leaf that has the
// timestamping extended key usage. The warnings are advice worth showing
// (for example an Ed25519 log key without an origin, which fits Rekor v1
// only).
func Create(opts CreateOptions) (data []byte, warnings []string, err error) {
	var cas []root.CertificateAuthority
	for i, a := range opts.CertificateAuthorities {
		ca, err := makeCA(a)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate chain %d: %w", i+1, err)
		}
		cas = append(cas, ca)
	}
	var tsas []root.TimestampingAuthority
	for i, a := range opts.TimestampAuthorities {
		tsa, err := makeTSA(a)
		if err != nil {
			return nil, nil, fmt.Errorf("TSA chain %d: %w", i+1, err)
		}
		tsas = append(tsas, tsa)
	}
	tlogs := map[string]*root.TransparencyLog{}
	for i, l := range opts.TransparencyLogs {
		tl, w, err := makeLog(l, true)
		if err != nil {
			return nil, nil, fmt.Errorf("transparency log %d: %w", i+1, err)
		}
		id := hex.EncodeToString(tl.ID)
		if _, dup := tlogs[id]; dup {
			return nil, nil, fmt.Errorf("transparency log %d: log id %s given twice", i+1, id)
		}
		tlogs[id] = tl
		for _, s := range w {
			warnings = append(warnings, fmt.Sprintf("transparency log %d: %s", i+1, s))
		}
	}
	ctlogs := map[string]*root.TransparencyLog{}
	for i, l := range opts.CTLogs {
		if l.Origin != "" {
			return nil, nil, fmt.Errorf("CT log %d: an origin applies to Rekor v2 logs only", i+1)
		}
		tl, _, err := makeLog(l, false)
		if err != nil {
			return nil, nil, fmt.Errorf("CT log %d: %w", i+1, err)
		}
		id := hex.EncodeToString(tl.ID)
		if _, dup := ctlogs[id]; dup {
			return nil, nil, fmt.Errorf("CT log %d: log id %s given twice", i+1, id)
		}
		ctlogs[id] = tl
	}
	if len(cas)+len(tsas)+len(tlogs)+len(ctlogs) == 0 {
		return nil, nil, errors.New("nothing to trust: give at least one certificate chain, log key or TSA chain")
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, ctlogs, tsas, tlogs)
	if err != nil {
		return nil, nil, err
	}
	data, err = tr.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	if _, err := ParseTrustedRoot(data); err != nil {
		return nil, nil, fmt.Errorf("the created trusted root does not parse back: %w", err)
	}
	return append(data, '\n'), warnings, nil
}

func checkWindow(start, end time.Time) error {
	if !end.IsZero() && !start.IsZero() && end.Before(start) {
		return fmt.Errorf("validity ends (%s) before it starts (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	return nil
}

// checkChain checks that each certificate is signed by the next one.
func checkChain(certs []*x509.Certificate) error {
	if len(certs) > MaxChainLength {
		return fmt.Errorf("%d certificates, more than %d", len(certs), MaxChainLength)
	}
	for i := 0; i+1 < len(certs); i++ {
		if err := certs[i].CheckSignatureFrom(certs[i+1]); err != nil {
			return fmt.Errorf("certificate %d (%s) is not signed by certificate %d (%s): %w",
				i+1, certs[i].Subject, i+2, certs[i+1].Subject, err)
		}
	}
	return nil
}

func makeCA(a Authority) (*root.FulcioCertificateAuthority, error) {
	certs, err := ParseCertificatesPEM(a.ChainPEM)
	if err != nil {
		return nil, err
	}
	if err := checkChain(certs); err != nil {
		return nil, err
	}
	for i, c := range certs {
		if !c.BasicConstraintsValid || !c.IsCA {
			return nil, fmt.Errorf("certificate %d (%s) is not a CA certificate: a CA chain lists intermediates and root, not a leaf", i+1, c.Subject)
		}
	}
	r := certs[len(certs)-1]
	ca := &root.FulcioCertificateAuthority{
		Root:                r,
		Intermediates:       certs[:len(certs)-1],
		ValidityPeriodStart: a.Start,
		ValidityPeriodEnd:   a.End,
		URI:                 a.URI,
	}
	if ca.ValidityPeriodStart.IsZero() {
		ca.ValidityPeriodStart = r.NotBefore
	}
	if len(ca.Intermediates) == 0 {
		ca.Intermediates = nil
	}
	return ca, checkWindow(ca.ValidityPeriodStart, ca.ValidityPeriodEnd)
}

func makeTSA(a Authority) (*root.SigstoreTimestampingAuthority, error) {
	certs, err := ParseCertificatesPEM(a.ChainPEM)
	if err != nil {
		return nil, err
	}
	if len(certs) < 2 {
		return nil, errors.New("a TSA chain needs the signing certificate and its root (at least two certificates)")
	}
	if err := checkChain(certs); err != nil {
		return nil, err
	}
	leaf := certs[0]
	if leaf.IsCA {
		return nil, fmt.Errorf("the first certificate (%s) is a CA: a TSA chain starts with the signing certificate", leaf.Subject)
	}
	if !ekuIsTimestamping(leaf) {
		return nil, fmt.Errorf("the signing certificate (%s) lacks the timestamping extended key usage", leaf.Subject)
	}
	r := certs[len(certs)-1]
	tsa := &root.SigstoreTimestampingAuthority{
		Root:                r,
		Leaf:                leaf,
		Intermediates:       certs[1 : len(certs)-1],
		ValidityPeriodStart: a.Start,
		ValidityPeriodEnd:   a.End,
		URI:                 a.URI,
	}
	if tsa.ValidityPeriodStart.IsZero() {
		tsa.ValidityPeriodStart = leaf.NotBefore
	}
	if len(tsa.Intermediates) == 0 {
		tsa.Intermediates = nil
	}
	return tsa, checkWindow(tsa.ValidityPeriodStart, tsa.ValidityPeriodEnd)
}

func ekuIsTimestamping(c *x509.Certificate) bool {
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageTimeStamping {
			return true
		}
	}
	return false
}

func makeLog(l Log, rekor bool) (*root.TransparencyLog, []string, error) {
	v, err := ParsePublicKeyPEM(l.KeyPEM)
	if err != nil {
		return nil, nil, err
	}
	pub, err := v.PublicKey()
	if err != nil {
		return nil, nil, err
	}
	if l.BaseURL != "" {
		u, err := url.Parse(l.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, nil, fmt.Errorf("URL %s: want an http(s) URL", textsafe.RawQuote(l.BaseURL))
		}
	}
	var warnings []string
	var id []byte
	if l.Origin != "" {
		if l.BaseURL == "" {
			return nil, nil, errors.New("a log with an origin (Rekor v2) needs its URL: sigstore-go checks checkpoints under the URL's host name")
		}
		u, _ := url.Parse(l.BaseURL)
		if u.Hostname() != l.Origin {
			return nil, nil, fmt.Errorf("origin %s differs from the URL's host name %s: sigstore-go verifies the checkpoints of %s under %s, so they would never verify",
				textsafe.RawQuote(l.Origin), textsafe.RawQuote(u.Hostname()), l.BaseURL, textsafe.RawQuote(u.Hostname()))
		}
		if _, id, err = note.KeyHash(l.Origin, pub); err != nil {
			return nil, nil, fmt.Errorf("log id: %w", err)
		}
	} else {
		if id, err = evidence.KeyDigest(pub); err != nil {
			return nil, nil, err
		}
		if _, ok := pub.(ed25519.PublicKey); ok && rekor {
			warnings = append(warnings, "an Ed25519 key without an origin: for a Rekor v2 log give the origin, or its log id will not match its entries")
		}
	}
	start := l.Start
	if start.IsZero() {
		start = time.Unix(0, 0).UTC()
	}
	if err := checkWindow(start, l.End); err != nil {
		return nil, nil, err
	}
	return &root.TransparencyLog{
		BaseURL:             l.BaseURL,
		ID:                  id,
		ValidityPeriodStart: start,
		ValidityPeriodEnd:   l.End,
		HashFunc:            crypto.SHA256,
		PublicKey:           pub,
		SignatureHashFunc:   crypto.SHA256, // recomputed by sigstore-go on parse
	}, warnings, nil
}
