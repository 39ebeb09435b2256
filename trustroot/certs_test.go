package trustroot

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"sync/atomic"
	"testing"
	"time"
)

// Test certificate factory: small hierarchies with every knob the chain
// cache's reasoning depends on (validity, CA bit, path length, key usage,
// name and policy constraints, critical extensions).

var serial atomic.Int64

type certSpec struct {
	cn          string
	org         string // default "mcpsign test"
	notBefore   time.Time
	notAfter    time.Time
	ca          bool
	noBasic     bool // no basic constraints extension at all
	maxPathZero bool
	eku         []x509.ExtKeyUsage
	unknownEKU  []asn1.ObjectIdentifier
	emails      []string
	permitEmail []string // name constraints
	extra       []pkix.Extension
	curve       elliptic.Curve // default P-256
	criticalEKU bool           // timestamping leaves: EKU extension marked critical
	serial      int64          // default: a fresh one
	keyUsage    x509.KeyUsage  // default: certSign and cRLSign for a CA, digitalSignature otherwise
}

type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var (
	oidTimeStamping       = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}
	oidUnhandledCritical  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}
	policyConstraintsZero = []byte{0x30, 0x03, 0x80, 0x01, 0x00} // requireExplicitPolicy 0
)

// issue makes a certificate from spec, signed by parent (self-signed when
// parent is nil).
func issue(t testing.TB, spec certSpec, parent *testCert) *testCert {
	t.Helper()
	curve := spec.curve
	if curve == nil {
		curve = elliptic.P256()
	}
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	org := spec.org
	if org == "" {
		org = "mcpsign test"
	}
	sn := spec.serial
	if sn == 0 {
		sn = serial.Add(1)
	}
	tmpl := &x509.Certificate{
		SerialNumber:       big.NewInt(sn),
		Subject:            pkix.Name{CommonName: spec.cn, Organization: []string{org}},
		NotBefore:          spec.notBefore,
		NotAfter:           spec.notAfter,
		ExtKeyUsage:        spec.eku,
		UnknownExtKeyUsage: spec.unknownEKU,
		EmailAddresses:     spec.emails,
		ExtraExtensions:    spec.extra,
	}
	if spec.criticalEKU {
		tmpl.ExtKeyUsage = nil
		v, err := asn1.Marshal([]asn1.ObjectIdentifier{oidTimeStamping})
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: oidExtKeyUsage, Critical: true, Value: v})
	}
	if spec.ca {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	if spec.keyUsage != 0 {
		tmpl.KeyUsage = spec.keyUsage
	}
	if !spec.noBasic {
		tmpl.BasicConstraintsValid = true
		tmpl.IsCA = spec.ca
		if spec.maxPathZero {
			tmpl.MaxPathLen = 0
			tmpl.MaxPathLenZero = true
		} else {
			tmpl.MaxPathLen = -1
		}
	}
	if len(spec.permitEmail) > 0 {
		tmpl.PermittedEmailAddresses = spec.permitEmail
	}
	parentCert, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		parentCert, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: c, key: key}
}

// The reference time of the hierarchies.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func years(n int) time.Duration { return time.Duration(n) * 365 * 24 * time.Hour }

// The hierarchies are on P-256 (the certSpec default): the chain cache's
// reasoning does not depend on the curve, and P-384 (public-good's roots)
// has no assembly, so under -race its instrumented arithmetic made the
// chain tables take a minute. One row of each table keeps P-384
// (publicGoodCurves).
func rootSpec(cn string) certSpec {
	return certSpec{cn: cn, notBefore: t0.Add(-years(10)), notAfter: t0.Add(years(10)), ca: true}
}

// publicGoodCurves puts a hierarchy on P-384, as Sigstore public-good's
// roots, intermediates and timestamping leaf are.
func publicGoodCurves(specs ...*certSpec) {
	for _, s := range specs {
		s.curve = elliptic.P384()
	}
}

func intermediateSpec(cn string) certSpec {
	return certSpec{cn: cn, notBefore: t0.Add(-years(5)), notAfter: t0.Add(years(5)), ca: true,
		eku: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
}

func leafSpec(email string) certSpec {
	return certSpec{cn: "", notBefore: t0.Add(-10 * time.Minute), notAfter: t0.Add(10 * time.Minute),
		eku: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, emails: []string{email}}
}
