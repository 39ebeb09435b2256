package sign

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/evidence"
)

func TestNewCertificateSigner(t *testing.T) {
	pki := newTestPKI(t)
	key := mustECKey(t)
	other := mustECKey(t)
	now := time.Now()
	with := func(f func(*leafOpts)) leafOpts { o := codeSigningLeaf(); f(&o); return o }
	full := []*x509.Certificate{pki.inter, pki.root}
	tests := []struct {
		name  string
		leaf  *x509.Certificate
		chain []*x509.Certificate
		roots []*x509.Certificate
		msg   string // "" = accepted
		cause error  // the refusal's Cause, if any
	}{
		{name: "code signing leaf, full chain", leaf: pki.leaf(t, key.Public(), codeSigningLeaf()), chain: full},
		{name: "no EKU extension", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) { o.extKeyUsage = nil })), chain: full},
		{name: "chain without root, root from --ca-roots", leaf: pki.leaf(t, key.Public(), codeSigningLeaf()),
			chain: []*x509.Certificate{pki.inter}, roots: []*x509.Certificate{pki.root}},
		{name: "key mismatch", leaf: pki.leaf(t, other.Public(), codeSigningLeaf()), chain: full, msg: "does not match the private key"},
		{name: "expired", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) {
			o.notBefore, o.notAfter = now.Add(-2*time.Hour), now.Add(-time.Hour)
		})), chain: full, msg: "expired on"},
		{name: "not yet valid", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) {
			o.notBefore = now.Add(time.Hour)
			o.notAfter = now.Add(2 * time.Hour)
		})), chain: full, msg: "not valid before"},
		{name: "no digitalSignature", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) { o.keyUsage = x509.KeyUsageKeyEncipherment })),
			chain: full, msg: "digitalSignature"},
		{name: "serverAuth only", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) { o.extKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })),
			chain: full, msg: "serverAuth"},
		{name: "codeSigning and serverAuth", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) {
			o.extKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning, x509.ExtKeyUsageServerAuth}
		})), chain: full, msg: "serverAuth"},
		{name: "CA leaf", leaf: pki.leaf(t, key.Public(), with(func(o *leafOpts) { o.isCA = true })), chain: full, msg: "CA certificate"},
		{name: "chain in the wrong order", leaf: pki.leaf(t, key.Public(), codeSigningLeaf()),
			chain: []*x509.Certificate{pki.root, pki.inter}, msg: "did not issue", cause: ErrChainOrder},
		{name: "no root anywhere", leaf: pki.leaf(t, key.Public(), codeSigningLeaf()),
			chain: []*x509.Certificate{pki.inter}, msg: "no root CA certificate", cause: ErrNoRootCA},
		{name: "unrelated root", leaf: pki.leaf(t, key.Public(), codeSigningLeaf()),
			chain: []*x509.Certificate{pki.inter}, roots: []*x509.Certificate{newTestPKI(t).root}, msg: "no root CA certificate", cause: ErrNoRootCA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewCertificateSigner(key, tt.leaf, tt.chain, tt.roots, now)
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Leaf() != tt.leaf || s.root == nil || s.Method() != evidence.MethodCertificate {
					t.Errorf("signer %+v", s)
				}
				return
			}
			if !errors.Is(err, ErrCertificate) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("want a refusal saying %q, got %v", tt.msg, err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("%v is not %v", err, tt.cause)
			}
			if strings.Contains(err.Error(), "--") {
				t.Errorf("a library error names a flag: %v", err)
			}
		})
	}
}

func TestParseCertificates(t *testing.T) {
	pki := newTestPKI(t)
	pemOf := func(cs ...*x509.Certificate) []byte {
		var b []byte
		for _, c := range cs {
			b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
		return b
	}
	got, err := ParseCertificates(pemOf(pki.inter, pki.root))
	if err != nil || len(got) != 2 || !got[1].Equal(pki.root) {
		t.Fatalf("%v %v", got, err)
	}
	inter, root := SplitChain(got)
	if root == nil || len(inter) != 1 {
		t.Error("SplitChain did not find the root")
	}
	if _, root := SplitChain(got[:1]); root != nil {
		t.Error("an intermediate taken for a root")
	}
	many := pemOf(pki.root, pki.root, pki.root, pki.root, pki.root, pki.root, pki.root, pki.root, pki.root, pki.root, pki.root)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"none", []byte("hello"), "no PEM CERTIFICATE block"},
		{"private key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}), `PEM block 1 is "PRIVATE KEY", want CERTIFICATE`},
		{"garbage DER", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), "certificates: "},
		{"trailing bytes", append(pemOf(pki.inter), "trailing"...), "unexpected data after certificate 1"},
		{"too many", many, "11 certificates, more than 10"},
		{"too large", make([]byte, MaxKeyFileBytes+1), "larger than"},
	} {
		if _, err := ParseCertificates(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	trusted := pem.EncodeToMemory(&pem.Block{Type: "TRUSTED CERTIFICATE", Bytes: pki.inter.Raw})
	if _, err := ParseCertificates(trusted); err == nil || !strings.Contains(err.Error(), `"TRUSTED CERTIFICATE", want CERTIFICATE`) {
		t.Errorf("a certificate in a TRUSTED CERTIFICATE block: %v", err)
	}
}

func FuzzParseCertificates(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		cs, err := ParseCertificates(in)
		if err == nil && (len(cs) == 0 || len(cs) > MaxChainCertificates) {
			t.Fatalf("%d certificates accepted", len(cs))
		}
	})
}
