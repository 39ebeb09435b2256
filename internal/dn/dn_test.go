package dn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

var (
	oidCN      = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO       = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU      = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidC       = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidSerial  = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidEmail   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidDC      = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUnknown = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}
)

func atv(oid asn1.ObjectIdentifier, tag int, value []byte) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: value}}
}

func utf8v(oid asn1.ObjectIdentifier, s string) pkix.AttributeTypeAndValue {
	return atv(oid, asn1.TagUTF8String, []byte(s))
}

func rdns(sets ...[]pkix.AttributeTypeAndValue) []byte {
	seq := pkix.RDNSequence{}
	for _, s := range sets {
		seq = append(seq, pkix.RelativeDistinguishedNameSET(s))
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		panic(err)
	}
	return der
}

func one(a ...pkix.AttributeTypeAndValue) []pkix.AttributeTypeAndValue { return a }

// nameCases are DER names and their form; each is also checked against
// openssl when it is installed.
var nameCases = []struct {
	name string
	der  []byte
	want string
}{
	{"two RDNs, most significant last", rdns(one(utf8v(oidO, "Example Corp")), one(utf8v(oidCN, "MCP Release Signing"))),
		"CN=MCP Release Signing,O=Example Corp"},
	{"reversed RDN order", rdns(one(utf8v(oidCN, "MCP Release Signing")), one(utf8v(oidO, "Example Corp"))),
		"O=Example Corp,CN=MCP Release Signing"},
	{"duplicate CNs", rdns(one(utf8v(oidO, "Example Corp")), one(utf8v(oidCN, "Mallory")), one(utf8v(oidCN, "MCP Release Signing"))),
		"CN=MCP Release Signing,CN=Mallory,O=Example Corp"},
	{"multi-valued RDN", rdns(one(utf8v(oidO, "Example Corp")), one(utf8v(oidCN, "MCP Release Signing"), utf8v(oidOU, "Release"))),
		// DER sorts the SET: OU (shorter encoding) first; printed reversed.
		"CN=MCP Release Signing+OU=Release,O=Example Corp"},
	{"specials escaped", rdns(one(utf8v(oidCN, `a,b+c"d\e<f>g;h=i`))), `CN=a\,b\+c\"d\\e\<f\>g\;h=i`},
	{"leading hash and spaces", rdns(one(utf8v(oidCN, "#x y ")), one(utf8v(oidO, " lead"))), `O=\ lead,CN=\#x y\ `},
	{"hash inside", rdns(one(utf8v(oidCN, "a#b"))), "CN=a#b"},
	{"single space", rdns(one(utf8v(oidCN, " "))), `CN=\ `},
	{"empty value", rdns(one(utf8v(oidCN, ""))), "CN="},
	{"beyond ASCII", rdns(one(utf8v(oidCN, "Café ✓"))), `CN=Caf\C3\A9 \E2\9C\93`},
	{"controls", rdns(one(utf8v(oidCN, "a\nb\x7f\x00"))), `CN=a\0Ab\7F\00`},
	{"bidi override", rdns(one(utf8v(oidCN, "a\u202eb"))), `CN=a\E2\80\AEb`},
	{"printable and IA5", rdns(one(atv(oidC, asn1.TagPrintableString, []byte("DE"))), one(atv(oidDC, asn1.TagIA5String, []byte("com"))), one(atv(oidEmail, asn1.TagIA5String, []byte("r@example.com")))),
		"emailAddress=r@example.com,DC=com,C=DE"},
	{"T61 as Latin-1", rdns(one(atv(oidCN, asn1.TagT61String, []byte("Caf\xe9")))), `CN=Caf\C3\A9`},
	{"BMPString", rdns(one(atv(oidCN, asn1.TagBMPString, []byte{0, 'A', 0x00, 0xe9}))), `CN=A\C3\A9`},
	{"serial number", rdns(one(atv(oidSerial, asn1.TagPrintableString, []byte("42"))), one(utf8v(oidCN, "x"))), "CN=x,serialNumber=42"},
	{"unknown type as hex DER", rdns(one(utf8v(oidUnknown, "hello"))), "1.3.6.1.4.1.99999.1=#0C0568656C6C6F"},
	{"empty name", rdns(), ""},
}

func TestFormat(t *testing.T) {
	for _, tc := range nameCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Format(tc.der)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if tc.want == "" {
				return
			}
			// The form is its own canonical form.
			if c, err := Canonical(got); err != nil || c != got {
				t.Errorf("Canonical(%q) = %q, %v", got, c, err)
			}
		})
	}
}

// TestFormatAgainstOpenSSL compares Format with `openssl x509 -noout
// -subject -nameopt RFC2253` on the same certificates.
func TestFormatAgainstOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, tc := range nameCases {
		if tc.want == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), RawSubject: tc.der,
				NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "c.pem")
			if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(openssl, "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", file).Output()
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSuffix(strings.TrimPrefix(string(out), "subject="), "\n")
			if got != tc.want {
				t.Errorf("openssl %s\nwant    %s", got, tc.want)
			}
		})
	}
}

func TestFormatMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		der  []byte
	}{
		{"not a sequence", []byte{0x31, 0}},
		{"trailing", append(rdns(one(utf8v(oidCN, "x"))), 0)},
		{"empty RDN", []byte{0x30, 0x02, 0x31, 0x00}},
		{"RDN not a set", []byte{0x30, 0x02, 0x30, 0x00}},
		{"invalid UTF-8", rdns(one(atv(oidCN, asn1.TagUTF8String, []byte{0xff})))},
		{"BMP surrogate", rdns(one(atv(oidCN, asn1.TagBMPString, []byte{0xd8, 0x00})))},
		{"BMP odd", rdns(one(atv(oidCN, asn1.TagBMPString, []byte{0})))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := Format(tc.der); !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %q, %v; want ErrMalformed", s, err)
			}
			if s := String(tc.der); !strings.HasPrefix(s, "#") {
				t.Errorf("String = %q", s)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"CN=MCP Release Signing,O=Example Corp", "CN=MCP Release Signing,O=Example Corp"},
		{"CN=MCP Release Signing+OU=Release,O=Example Corp", "CN=MCP Release Signing+OU=Release,O=Example Corp"},
		{"CN=a\\2Cb", `CN=a\,b`},
		{"CN=Café", `CN=Caf\C3\A9`},
		{"CN=caf\\c3\\a9", `CN=caf\C3\A9`},
		{"2.5.4.3=x", "CN=x"},
		{"2.5.4.3=#0C0178", "CN=x"},
		{"1.3.6.1.4.1.99999.1=hello", "1.3.6.1.4.1.99999.1=#0C0568656C6C6F"},
		{"1.3.6.1.4.1.99999.1=#0c0568656c6c6f", "1.3.6.1.4.1.99999.1=#0C0568656C6C6F"},
		{"CN=a;b", `CN=a\;b`},
		{"CN=x, O=y", "CN=x,O=y"},
		{" CN = x", `CN=\ x`},
		{`CN=\ x\ `, `CN=\ x\ `},
		{`CN=x\=y`, `CN=x=y`},
		{"uid=x,UID=y", "uid=x,UID=y"},
		{"CN=", "CN="},
	} {
		got, err := Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "CN", "cn=x", "CommonName=x", "CN=x,", "CN=x+", ",CN=x", "CN=a\\", "CN=a\\zz",
		"CN=a\\4", "CN=\x01", "CN=#", "CN=#0G", "CN=#0C01", "CN=#0C017800", "CN=\\ff", "3.1=x", "1.40=x",
		"1=x", "1.02=x", "1..2=x", "1.2.3333333333=x", "=x",
	} {
		if got, err := Canonical(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Canonical(%q) = %q, %v; want ErrSyntax", in, got, err)
		}
	}
}

// TestFormatInjective: names that differ format differently.
func TestFormatInjective(t *testing.T) {
	seen := map[string][]byte{}
	for _, der := range [][]byte{
		rdns(one(utf8v(oidCN, "a,b"))),
		rdns(one(utf8v(oidCN, "a")), one(utf8v(oidCN, "b"))),
		rdns(one(utf8v(oidCN, "b")), one(utf8v(oidCN, "a"))),
		rdns(one(utf8v(oidCN, "a"), utf8v(oidCN, "b"))),
		rdns(one(utf8v(oidCN, "a+b"))),
		rdns(one(utf8v(oidCN, `a\`)), one(utf8v(oidCN, "b"))),
		rdns(one(utf8v(oidCN, `a\,b`))),
		rdns(one(utf8v(oidCN, "#0C0178"))),
		rdns(one(utf8v(oidUnknown, "x"))),
		rdns(one(atv(oidUnknown, asn1.TagPrintableString, []byte("x")))),
	} {
		s, err := Format(der)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[s]; ok && !bytes.Equal(prev, der) {
			t.Errorf("two names format as %q", s)
		}
		seen[s] = der
	}
}

func FuzzFormat(f *testing.F) {
	for _, tc := range nameCases {
		f.Add(tc.der)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		s, err := Format(der)
		if err != nil {
			return
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] >= 0x7f {
				t.Fatalf("byte %#x in %q", s[i], s)
			}
		}
		if s == "" {
			return
		}
		// What Format writes, Canonical reads back unchanged.
		if c, err := Canonical(s); err != nil || c != s {
			t.Fatalf("Canonical(%q) = %q, %v", s, c, err)
		}
	})
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"CN=MCP Release Signing,O=Example Corp", `CN=a\,b+OU=\C3\A9`, "1.2.3=#0C0178", "CN=Café"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(s)
		if err != nil {
			return
		}
		// The canonical form is a fixed point.
		if c2, err := Canonical(c); err != nil || c2 != c {
			t.Fatalf("Canonical(%q) = %q, then %q, %v", s, c, c2, err)
		}
	})
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`CN=a\,b\\c,O=x`: `CN=a\,b\\c,O=x`,
		"CN=a\x1b[31m":   textsafe.Escape("CN=a\x1b[31m"),
		"CN=a\u202eb":    textsafe.Escape("CN=a\u202eb"),
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
