package trustroot

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Description is what a trusted root trusts and for how long: the stable
// form behind 'mcpsign trustroot show' (docs/TRUSTROOT.md). Strings come
// from certificates and the file: escape them before printing.
type Description struct {
	CertificateAuthorities []AuthorityDescription `json:"certificateAuthorities"`
	TransparencyLogs       []LogDescription       `json:"transparencyLogs"`
	CTLogs                 []LogDescription       `json:"ctLogs"`
	TimestampAuthorities   []AuthorityDescription `json:"timestampAuthorities"`
}

// AuthorityDescription describes a certificate or timestamping authority.
type AuthorityDescription struct {
	URI string `json:"uri"`
	// ValidFrom and ValidUntil bound when the trusted root trusts it; nil
	// means open.
	ValidFrom  *time.Time `json:"validFrom"`
	ValidUntil *time.Time `json:"validUntil"`
	// Status is "active", "ended" or "not yet" at the time of Describe.
	Status string `json:"status"`
	// Certificates, the one closest to the signer first, the root last.
	Certificates []CertificateDescription `json:"certificates"`
}

// CertificateDescription describes one certificate of a chain.
type CertificateDescription struct {
	// Role is "root", "intermediate" or "leaf".
	Role      string    `json:"role"`
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	NotBefore time.Time `json:"notBefore"`
	NotAfter  time.Time `json:"notAfter"`
	// Status is "valid", "expired" or "not yet valid" at the time of
	// Describe.
	Status  string `json:"status"`
	KeyType string `json:"keyType"`
	SHA256  string `json:"sha256"`
}

// LogDescription describes a transparency or CT log.
type LogDescription struct {
	BaseURL    string     `json:"baseUrl"`
	LogID      string     `json:"logId"`
	KeyType    string     `json:"keyType"`
	ValidFrom  *time.Time `json:"validFrom"`
	ValidUntil *time.Time `json:"validUntil"`
	Status     string     `json:"status"`
}

// Describe lists what tm trusts, as of now. Authorities of types other
// than sigstore-go's own are listed without certificates.
func Describe(tm root.TrustedMaterial, now time.Time) *Description {
	d := &Description{
		CertificateAuthorities: []AuthorityDescription{},
		TransparencyLogs:       describeLogs(tm.RekorLogs(), now),
		CTLogs:                 describeLogs(tm.CTLogs(), now),
		TimestampAuthorities:   []AuthorityDescription{},
	}
	for _, ca := range tm.FulcioCertificateAuthorities() {
		a := AuthorityDescription{Certificates: []CertificateDescription{}}
		if f, ok := ca.(*root.FulcioCertificateAuthority); ok {
			a.URI = f.URI
			a.ValidFrom, a.ValidUntil = timePtr(f.ValidityPeriodStart), timePtr(f.ValidityPeriodEnd)
			for _, c := range f.Intermediates {
				a.Certificates = append(a.Certificates, describeCert(c, "intermediate", now))
			}
			if f.Root != nil {
				a.Certificates = append(a.Certificates, describeCert(f.Root, "root", now))
			}
		}
		a.Status = windowStatus(a.ValidFrom, a.ValidUntil, now)
		d.CertificateAuthorities = append(d.CertificateAuthorities, a)
	}
	for _, tsa := range tm.TimestampingAuthorities() {
		a := AuthorityDescription{Certificates: []CertificateDescription{}}
		if s, ok := tsa.(*root.SigstoreTimestampingAuthority); ok {
			a.URI = s.URI
			a.ValidFrom, a.ValidUntil = timePtr(s.ValidityPeriodStart), timePtr(s.ValidityPeriodEnd)
			if s.Leaf != nil {
				a.Certificates = append(a.Certificates, describeCert(s.Leaf, "leaf", now))
			}
			for _, c := range s.Intermediates {
				a.Certificates = append(a.Certificates, describeCert(c, "intermediate", now))
			}
			if s.Root != nil {
				a.Certificates = append(a.Certificates, describeCert(s.Root, "root", now))
			}
		}
		a.Status = windowStatus(a.ValidFrom, a.ValidUntil, now)
		d.TimestampAuthorities = append(d.TimestampAuthorities, a)
	}
	return d
}

func describeLogs(logs map[string]*root.TransparencyLog, now time.Time) []LogDescription {
	out := []LogDescription{}
	for id, l := range logs {
		ld := LogDescription{
			BaseURL:    l.BaseURL,
			LogID:      id,
			KeyType:    KeyType(l.PublicKey),
			ValidFrom:  timePtr(l.ValidityPeriodStart),
			ValidUntil: timePtr(l.ValidityPeriodEnd),
		}
		ld.Status = windowStatus(ld.ValidFrom, ld.ValidUntil, now)
		out = append(out, ld)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !timeOf(a.ValidFrom).Equal(timeOf(b.ValidFrom)) {
			return timeOf(a.ValidFrom).Before(timeOf(b.ValidFrom))
		}
		if a.BaseURL != b.BaseURL {
			return a.BaseURL < b.BaseURL
		}
		return a.LogID < b.LogID
	})
	return out
}

func describeCert(c *x509.Certificate, role string, now time.Time) CertificateDescription {
	sum := sha256.Sum256(c.Raw)
	status := "valid"
	switch {
	case now.Before(c.NotBefore):
		status = "not yet valid"
	case now.After(c.NotAfter):
		status = "expired"
	}
	return CertificateDescription{
		Role:      role,
		Subject:   dn.String(c.RawSubject),
		Issuer:    dn.String(c.RawIssuer),
		NotBefore: c.NotBefore.UTC(),
		NotAfter:  c.NotAfter.UTC(),
		Status:    status,
		KeyType:   KeyType(c.PublicKey),
		SHA256:    hex.EncodeToString(sum[:]),
	}
}

// KeyType names a public key: "ECDSA P-256", "Ed25519", "RSA 4096".
func KeyType(k crypto.PublicKey) string {
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case nil:
		return "none"
	}
	return fmt.Sprintf("%T", k)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func windowStatus(from, until *time.Time, now time.Time) string {
	switch {
	case from != nil && now.Before(*from):
		return "not yet"
	case until != nil && now.After(*until):
		return "ended"
	}
	return "active"
}

// WriteText writes d for people, as 'mcpsign trustroot show' prints it
// after the file's name: each section with its entries, their periods and
// status, every string from the file escaped.
func (d *Description) WriteText(w io.Writer) {
	authorities := func(title string, as []AuthorityDescription) {
		fmt.Fprintf(w, "\n%s: %d\n", title, len(as))
		for i, a := range as {
			fmt.Fprintf(w, "  %d. %s\n     trusted %s (%s)\n", i+1, orNoURL(a.URI), period(a.ValidFrom, a.ValidUntil), a.Status)
			for _, c := range a.Certificates {
				fmt.Fprintf(w, "     %-12s %s\n", c.Role, dn.Text(c.Subject))
				fmt.Fprintf(w, "     %-12s %s, %s to %s (%s), sha256:%s\n", "", c.KeyType,
					c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339), c.Status, c.SHA256)
			}
		}
	}
	logs := func(title string, ls []LogDescription) {
		fmt.Fprintf(w, "\n%s: %d\n", title, len(ls))
		for i, l := range ls {
			fmt.Fprintf(w, "  %d. %s\n     %s, log id %s\n     trusted %s (%s)\n", i+1, orNoURL(l.BaseURL), l.KeyType, l.LogID,
				period(l.ValidFrom, l.ValidUntil), l.Status)
		}
	}
	authorities("Certificate authorities", d.CertificateAuthorities)
	logs("Transparency logs", d.TransparencyLogs)
	logs("Certificate transparency logs", d.CTLogs)
	authorities("Timestamp authorities", d.TimestampAuthorities)
}

func orNoURL(s string) string {
	if s == "" {
		return "(no URL)"
	}
	return textsafe.Escape(s)
}

func period(from, until *time.Time) string {
	f, u := "always", "open end"
	if from != nil {
		f = "from " + from.Format(time.RFC3339)
	}
	if until != nil {
		u = "until " + until.Format(time.RFC3339)
	}
	if from == nil && until == nil {
		return "at all times"
	}
	return f + ", " + u
}
