package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"
)

// testPKI is a real enterprise-style PKI: a root, an intermediate, and leaf
// certificates issued by the intermediate.
type testPKI struct {
	root, inter       *x509.Certificate
	rootKey, interKey crypto.Signer
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	now := time.Now()
	rootKey := mustECKey(t)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpsign test root", Organization: []string{"Acme"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	root := mustCreate(t, rootTmpl, rootTmpl, rootKey.Public(), rootKey)
	interKey := mustECKey(t)
	inter := mustCreate(t, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "mcpsign test intermediate", Organization: []string{"Acme"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, MaxPathLenZero: true,
	}, root, interKey.Public(), rootKey)
	return &testPKI{root: root, inter: inter, rootKey: rootKey, interKey: interKey}
}

// leafOpts shape a leaf certificate.
type leafOpts struct {
	notBefore, notAfter time.Time
	keyUsage            x509.KeyUsage
	extKeyUsage         []x509.ExtKeyUsage
	isCA                bool
	email               string
}

func codeSigningLeaf() leafOpts {
	return leafOpts{
		notBefore: time.Now().Add(-time.Minute), notAfter: time.Now().Add(time.Hour),
		keyUsage: x509.KeyUsageDigitalSignature, extKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		email: "release@acme.example",
	}
}

func (p *testPKI) leaf(t *testing.T, pub crypto.PublicKey, o leafOpts) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "release", Organization: []string{"Acme"}},
		NotBefore: o.notBefore, NotAfter: o.notAfter, KeyUsage: o.keyUsage, ExtKeyUsage: o.extKeyUsage,
		BasicConstraintsValid: true, IsCA: o.isCA,
	}
	if o.email != "" {
		tmpl.EmailAddresses = []string{o.email}
		u, _ := url.Parse("https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1")
		tmpl.URIs = []*url.URL{u}
	}
	return mustCreate(t, tmpl, p.inter, pub, p.interKey)
}

func mustECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustCreate(t *testing.T, tmpl, parent *x509.Certificate, pub crypto.PublicKey, priv crypto.Signer) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
