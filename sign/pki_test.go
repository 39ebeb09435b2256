package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
)

// testPKI is a real enterprise-style PKI (internal/testkit/fixtures/testpki): a
// root, an intermediate, and leaf certificates issued by the intermediate.
type testPKI struct {
	*testpki.CA
	root, inter       *x509.Certificate
	rootKey, interKey crypto.Signer
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca := testpki.New(t, testpki.Names{Organization: "Acme", Root: "mcpsign test root", Intermediate: "mcpsign test intermediate"})
	return &testPKI{CA: ca, root: ca.Root, inter: ca.Intermediate, rootKey: ca.RootKey, interKey: ca.IntermediateKey}
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
	tmpl := testpki.CodeSigningLeaf(t, "release", "Acme", o.email)
	tmpl.NotBefore, tmpl.NotAfter = o.notBefore, o.notAfter
	tmpl.KeyUsage, tmpl.ExtKeyUsage, tmpl.IsCA = o.keyUsage, o.extKeyUsage, o.isCA
	if o.email != "" {
		tmpl.URIs = append(tmpl.URIs, testpki.WorkflowURI(t))
	}
	return p.Issue(t, pub, tmpl)
}

func mustECKey(t *testing.T) *ecdsa.PrivateKey { return testpki.ECKey(t) }
