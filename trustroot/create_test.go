package trustroot

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
)

func certsPEM(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func keyPEM(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// createOptionsFrom rebuilds the inputs of a trusted root, as an operator
// would pass them as PEM files.
func createOptionsFrom(t *testing.T, tr *root.TrustedRoot) CreateOptions {
	var o CreateOptions
	for _, ca := range tr.FulcioCertificateAuthorities() {
		f := ca.(*root.FulcioCertificateAuthority)
		o.CertificateAuthorities = append(o.CertificateAuthorities, Authority{
			ChainPEM: certsPEM(append(append([]*x509.Certificate{}, f.Intermediates...), f.Root)...),
			URI:      f.URI, Start: f.ValidityPeriodStart, End: f.ValidityPeriodEnd,
		})
	}
	for _, tsa := range tr.TimestampingAuthorities() {
		s := tsa.(*root.SigstoreTimestampingAuthority)
		chain := append([]*x509.Certificate{s.Leaf}, s.Intermediates...)
		o.TimestampAuthorities = append(o.TimestampAuthorities, Authority{
			ChainPEM: certsPEM(append(chain, s.Root)...),
			URI:      s.URI, Start: s.ValidityPeriodStart, End: s.ValidityPeriodEnd,
		})
	}
	for _, l := range tr.RekorLogs() {
		in := Log{KeyPEM: keyPEM(t, l.PublicKey), BaseURL: l.BaseURL, Start: l.ValidityPeriodStart, End: l.ValidityPeriodEnd}
		if _, ok := l.PublicKey.(ed25519.PublicKey); ok {
			u, _ := url.Parse(l.BaseURL)
			in.Origin = u.Hostname() // Rekor v2
		}
		o.TransparencyLogs = append(o.TransparencyLogs, in)
	}
	for _, l := range tr.CTLogs() {
		o.CTLogs = append(o.CTLogs, Log{KeyPEM: keyPEM(t, l.PublicKey), BaseURL: l.BaseURL, Start: l.ValidityPeriodStart, End: l.ValidityPeriodEnd})
	}
	return o
}

// TestCreateReproducesProduction rebuilds the public-good production root
// (Rekor v1 and v2, two Fulcio CAs, CT logs, the TSA) from its PEM parts:
// the log ids, including the C2SP key hash of the Rekor v2 log, and
// everything Describe shows must come out the same.
func TestCreateReproducesProduction(t *testing.T) {
	tr := productionRoot(t)
	data, warnings, err := Create(createOptionsFrom(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	got, err := ParseTrustedRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want, _ := json.MarshalIndent(Describe(tr, now), "", " ")
	have, _ := json.MarshalIndent(Describe(got, now), "", " ")
	if !bytes.Equal(want, have) {
		t.Errorf("created root differs:\nwant %s\ngot  %s", want, have)
	}
	// The real bundles verify against the created root.
	for _, c := range realCases {
		v := publicGoodVerifier(t, WithChainCache(got))
		if _, err := v.Verify(loadBundle(t, c.bundle), realPolicy(t, realIdentity, realIssuer, realDigest)); err != nil {
			t.Errorf("%s against the created root: %v", c.name, err)
		}
	}
}

func TestCreateRefuses(t *testing.T) {
	r := issue(t, rootSpec("root"), nil)
	i := issue(t, intermediateSpec("intermediate"), r)
	other := issue(t, rootSpec("other"), nil)
	leaf := issue(t, leafSpec("a@example.com"), i)
	tsaRoot := issue(t, tsaRootSpec(), nil)
	tsaLeaf := issue(t, tsaLeafSpec(), tsaRoot)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	good := Authority{ChainPEM: certsPEM(i.cert, r.cert)}
	cases := []struct {
		name string
		opts CreateOptions
		want string
	}{
		{"nothing", CreateOptions{}, "nothing to trust"},
		{"chain out of order", CreateOptions{CertificateAuthorities: []Authority{{ChainPEM: certsPEM(r.cert, i.cert)}}}, "not signed by"},
		{"chain with a gap", CreateOptions{CertificateAuthorities: []Authority{{ChainPEM: certsPEM(i.cert, other.cert)}}}, "not signed by"},
		{"leaf in a CA chain", CreateOptions{CertificateAuthorities: []Authority{{ChainPEM: certsPEM(leaf.cert, i.cert, r.cert)}}}, "not a CA"},
		{"CA window reversed", CreateOptions{CertificateAuthorities: []Authority{{ChainPEM: good.ChainPEM, Start: t0, End: t0.Add(-time.Hour)}}}, "before it starts"},
		{"not PEM", CreateOptions{CertificateAuthorities: []Authority{{ChainPEM: []byte("hello")}}}, "no PEM"},
		{"TSA chain of one", CreateOptions{TimestampAuthorities: []Authority{{ChainPEM: certsPEM(tsaRoot.cert)}}}, "at least two"},
		{"TSA chain starting with a CA", CreateOptions{TimestampAuthorities: []Authority{{ChainPEM: certsPEM(i.cert, r.cert)}}}, "is a CA"},
		{"TSA leaf without timestamping", CreateOptions{TimestampAuthorities: []Authority{{ChainPEM: certsPEM(leaf.cert, i.cert)}}}, "timestamping"},
		{"origin without URL", CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, edPub), Origin: "rekor.example"}}}, "needs its URL"},
		{"origin not the URL host", CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, edPub), Origin: "rekor.example", BaseURL: "https://log.example"}}}, "differs from the URL"},
		{"CT log with an origin", CreateOptions{CTLogs: []Log{{KeyPEM: keyPEM(t, &p256.PublicKey), Origin: "ct.example", BaseURL: "https://ct.example"}}}, "Rekor v2 logs only"},
		{"weak RSA log key", CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, &rsa1024.PublicKey)}}}, "at least 2048"},
		{"log URL not http", CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, &p256.PublicKey), BaseURL: "file:///etc"}}}, "http(s)"},
		{"same log twice", CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, &p256.PublicKey)}, {KeyPEM: keyPEM(t, &p256.PublicKey)}}}, "twice"},
		{"private key instead of a public key", CreateOptions{CTLogs: []Log{{KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}})}}}, "want PUBLIC KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Create(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}

	t.Run("a complete private deployment", func(t *testing.T) {
		data, warnings, err := Create(CreateOptions{
			CertificateAuthorities: []Authority{{ChainPEM: good.ChainPEM, URI: "https://fulcio.example"}},
			TransparencyLogs: []Log{
				{KeyPEM: keyPEM(t, edPub), BaseURL: "https://rekor.example", Origin: "rekor.example", Start: t0},
				{KeyPEM: keyPEM(t, &p256.PublicKey), BaseURL: "https://rekor-v1.example"},
			},
			CTLogs:               []Log{{KeyPEM: keyPEM(t, &p256.PublicKey), BaseURL: "https://ct.example"}},
			TimestampAuthorities: []Authority{{ChainPEM: certsPEM(tsaLeaf.cert, tsaRoot.cert), URI: "https://tsa.example"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 0 {
			t.Errorf("warnings: %v", warnings)
		}
		tr, err := ParseTrustedRoot(data)
		if err != nil {
			t.Fatal(err)
		}
		d := Describe(tr, t0)
		if len(d.TransparencyLogs) != 2 || len(d.CTLogs) != 1 || len(d.CertificateAuthorities) != 1 || len(d.TimestampAuthorities) != 1 {
			t.Fatalf("described: %+v", d)
		}
		if !d.CertificateAuthorities[0].ValidFrom.Equal(r.cert.NotBefore) {
			t.Errorf("CA start %v, want the root's NotBefore", d.CertificateAuthorities[0].ValidFrom)
		}
		if !d.TransparencyLogs[0].ValidFrom.Equal(time.Unix(0, 0)) {
			t.Errorf("default log start %v, want the epoch", d.TransparencyLogs[0].ValidFrom)
		}
		der, _ := x509.MarshalPKIXPublicKey(&p256.PublicKey)
		if _, ok := tr.CTLogs()[hex.EncodeToString(sha256Sum(der))]; !ok {
			t.Error("CT log id is not the SHA-256 of its DER key")
		}
	})
	t.Run("Ed25519 key without origin warns", func(t *testing.T) {
		_, warnings, err := Create(CreateOptions{TransparencyLogs: []Log{{KeyPEM: keyPEM(t, edPub), BaseURL: "https://rekor.example"}}})
		if err != nil || len(warnings) != 1 {
			t.Errorf("warnings %v, err %v", warnings, err)
		}
	})
}
