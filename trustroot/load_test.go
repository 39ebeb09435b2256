package trustroot

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTrustedRootFile(t *testing.T) {
	prod := productionRootJSON(t)
	var doc map[string]any
	if err := json.Unmarshal(prod, &doc); err != nil {
		t.Fatal(err)
	}
	mutated := func(f func(map[string]any)) []byte {
		var d map[string]any
		_ = json.Unmarshal(prod, &d)
		f(d)
		b, _ := json.Marshal(d)
		return b
	}
	manyLogs := mutated(func(d map[string]any) {
		tl := d["tlogs"].([]any)
		for len(tl) <= MaxEntries {
			tl = append(tl, tl[0])
		}
		d["tlogs"] = tl
	})
	longChain := mutated(func(d map[string]any) {
		ca := d["certificateAuthorities"].([]any)[1].(map[string]any)
		certs := ca["certChain"].(map[string]any)["certificates"].([]any)
		for len(certs) <= MaxChainLength {
			certs = append(certs, certs[0])
		}
		ca["certChain"].(map[string]any)["certificates"] = certs
	})
	cases := []struct {
		name string
		data []byte
		want string // "" = loads
	}{
		{"production", prod, ""},
		{"unknown member", mutated(func(d map[string]any) { d["extra"] = 1 }), "unknown field"},
		{"other media type", mutated(func(d map[string]any) { d["mediaType"] = "application/json" }), "media type"},
		{"trusts nothing", []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), "trusts nothing"},
		{"too many logs", manyLogs, "more than"},
		{"chain too long", longChain, "more than"},
		{"not JSON", []byte("<html>"), "trusted root"},
		{"too large", append(prod, make([]byte, MaxTrustedRootBytes)...), "larger than 1048576 bytes"},
		{"tlog without validity", mutated(func(d map[string]any) {
			delete(d["tlogs"].([]any)[0].(map[string]any)["publicKey"].(map[string]any), "validFor")
		}), "validity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := LoadTrustedRootFile(writeFile(t, "trusted_root.json", tc.data))
			if tc.want == "" {
				if err != nil || tr == nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// Two logs of one kind with one log id: sigstore-go would keep the last.
	dupOf := func(list string) []byte {
		return mutated(func(d map[string]any) {
			logs := d[list].([]any)
			var twin map[string]any
			b, _ := json.Marshal(logs[0])
			_ = json.Unmarshal(b, &twin)
			twin["baseUrl"] = "https://evil.example"
			d[list] = append(logs, twin)
		})
	}
	for _, list := range []string{"tlogs", "ctlogs"} {
		data := dupOf(list)
		n := len(doc[list].([]any))
		_, err := LoadTrustedRootFile(writeFile(t, "dup.json", data))
		want := fmt.Sprintf("%s[0] (%s) and %s[%d] (https://evil.example) have one log id", list, doc[list].([]any)[0].(map[string]any)["baseUrl"], list, n)
		if !errors.Is(err, ErrDuplicateLogID) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", list, err, want)
		}
		if _, err := ParseTrustedRoot(data); !errors.Is(err, ErrDuplicateLogID) {
			t.Errorf("%s: ParseTrustedRoot: %v", list, err)
		}
	}
	if _, err := LoadTrustedRootFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// Load with a path never touches TUF.
	tm, err := Load(context.Background(), Options{TrustedRootPath: writeFile(t, "tr.json", prod), Offline: true, CacheDir: "/nonexistent"})
	if err != nil || len(tm.RekorLogs()) != 2 {
		t.Errorf("Load(path): %v", err)
	}
}

func TestLoadPKI(t *testing.T) {
	r := issue(t, rootSpec("corp root"), nil)
	i := issue(t, intermediateSpec("corp intermediate"), r)
	noEKU := leafSpec("release@corp.example")
	noEKU.eku = nil
	leaf := issue(t, noEKU, i)
	serverLeaf := issue(t, func() certSpec {
		s := leafSpec("web@corp.example")
		s.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		return s
	}(), i)
	other := issue(t, rootSpec("other root"), nil)
	otherLeaf := issue(t, leafSpec("x@corp.example"), issue(t, intermediateSpec("corp intermediate"), other))

	tm, err := LoadPKIFiles(writeFile(t, "roots.pem", certsPEM(r.cert)), writeFile(t, "inter.pem", certsPEM(i.cert)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []root.TrustedMaterial{tm, WithChainCache(tm)} {
		if _, err := verify.VerifyLeafCertificate(t0, leaf.cert, m); err != nil {
			t.Errorf("leaf without EKU: %v", err)
		}
		if _, err := verify.VerifyLeafCertificate(t0, serverLeaf.cert, m); err == nil {
			t.Error("serverAuth-only leaf accepted")
		}
		if _, err := verify.VerifyLeafCertificate(t0, otherLeaf.cert, m); err == nil {
			t.Error("leaf of another PKI accepted")
		}
		if _, err := verify.VerifyLeafCertificate(t0.Add(time.Hour), leaf.cert, m); err == nil {
			t.Error("expired leaf accepted")
		}
		if len(m.RekorLogs()) != 0 || len(m.TimestampingAuthorities()) != 0 {
			t.Error("PKI material must hold CAs only")
		}
	}
	// Without the intermediates file the leaf has no path.
	tm2, err := LoadPKI(certsPEM(r.cert), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.VerifyLeafCertificate(t0, leaf.cert, tm2); err == nil {
		t.Error("leaf accepted without its intermediate")
	}
	if cas := tm2.FulcioCertificateAuthorities(); len(cas) != 1 || cas[0].(*root.FulcioCertificateAuthority).URI != "pki:CN=corp root,O=mcpsign test" {
		t.Errorf("authorities %+v", cas)
	}
	noBasic := rootSpec("no basic constraints")
	noBasic.noBasic = true
	notCA := rootSpec("not a CA")
	notCA.ca = false
	// A CA whose key usage is there without keyCertSign may not sign
	// certificates (RFC 5280 4.2.1.3); crypto/x509 does not check it.
	noCertSign := rootSpec("no keyCertSign")
	noCertSign.keyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	noCertSignRoot := issue(t, noCertSign, nil)
	noCertSignInter := issue(t, certSpec{cn: "no keyCertSign inter", notBefore: t0.Add(-years(5)), notAfter: t0.Add(years(5)), ca: true,
		keyUsage: x509.KeyUsageDigitalSignature}, r)
	big := append([]byte("-----BEGIN CERTIFICATE-----\n"), bytes.Repeat([]byte("A"), MaxPEMBytes)...)
	for _, tc := range []struct {
		name        string
		roots       []byte
		inter       []byte
		want        error
		wantMessage string
	}{
		{"leaf as a root", certsPEM(leaf.cert), nil, ErrNotCA, "CA roots: certificate 1"},
		{"root without basic constraints", certsPEM(issue(t, noBasic, nil).cert), nil, ErrNotCA, "CA roots: certificate 1 (CN=no basic constraints"},
		{"second root not a CA", certsPEM(r.cert, issue(t, notCA, nil).cert), nil, ErrNotCA, "CA roots: certificate 2"},
		{"leaf as intermediate", certsPEM(r.cert), certsPEM(leaf.cert), ErrNotCA, "CA intermediates: certificate 1"},
		{"root without keyCertSign", certsPEM(noCertSignRoot.cert), nil, ErrNotCA, "CA roots: certificate 1 (CN=no keyCertSign,O=mcpsign test): not a CA certificate: its key usage lacks keyCertSign"},
		{"intermediate without keyCertSign", certsPEM(r.cert), certsPEM(i.cert, noCertSignInter.cert), ErrNotCA, "CA intermediates: certificate 2 (CN=no keyCertSign inter,O=mcpsign test): not a CA certificate: its key usage lacks keyCertSign"},
		{"no certificate", []byte("\n"), nil, ErrPEM, "CA roots:"},
		{"key instead of roots", keyPEM(t, r.key.Public()), nil, ErrPEM, "want CERTIFICATE"},
		{"trailing garbage", append(certsPEM(r.cert), "garbage"...), nil, ErrPEM, "unexpected data"},
		{"garbage intermediates", certsPEM(r.cert), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), ErrPEM, "CA intermediates:"},
		{"roots too large", big, nil, ErrTooLarge, "CA roots:"},
		{"intermediates too large", certsPEM(r.cert), big, ErrTooLarge, "CA intermediates:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadPKI(tc.roots, tc.inter)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.wantMessage) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.wantMessage)
			}
		})
	}
	// An issuing CA below the root may be the trust anchor: roots are
	// anchors by configuration, not by their self-signature.
	if tm, err := LoadPKI(certsPEM(i.cert), nil); err != nil || len(tm.FulcioCertificateAuthorities()) != 1 {
		t.Errorf("an intermediate CA as the root: %v", err)
	}
	// LoadPKIFiles names the file, and refuses a file over the bound.
	if _, err := LoadPKIFiles(writeFile(t, "leaf.pem", certsPEM(leaf.cert)), ""); !errors.Is(err, ErrNotCA) || !strings.Contains(err.Error(), "leaf.pem") {
		t.Errorf("LoadPKIFiles: %v", err)
	}
	if _, err := LoadPKIFiles(writeFile(t, "big.pem", append(big, '\n')), ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("LoadPKIFiles of a large file: %v", err)
	}
}

func TestLoadPublicKey(t *testing.T) {
	msg := []byte("signed message")
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(s crypto.Signer, h crypto.Hash) []byte {
		var digest []byte = msg
		var opts crypto.SignerOpts = crypto.Hash(0)
		if h != 0 {
			hh := h.New()
			hh.Write(msg)
			digest, opts = hh.Sum(nil), h
		}
		sig, err := s.Sign(rand.Reader, digest, opts)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	for name, tc := range map[string]struct {
		key crypto.Signer
		sig []byte
	}{
		"ECDSA P-256 SHA-256": {p256, sign(p256, crypto.SHA256)},
		"ECDSA P-384 SHA-384": {p384, sign(p384, crypto.SHA384)},
		"Ed25519":             {edPriv, sign(edPriv, 0)},
		"RSA 2048 SHA-256":    {rsa2048, sign(rsa2048, crypto.SHA256)},
	} {
		t.Run(name, func(t *testing.T) {
			tm, err := LoadPublicKeyFile(writeFile(t, "key.pub", keyPEM(t, tc.key.Public())))
			if err != nil {
				t.Fatal(err)
			}
			v, err := tm.PublicKeyVerifier("any hint")
			if err != nil {
				t.Fatal(err)
			}
			if !v.ValidAtTime(time.Unix(0, 0)) || !v.ValidAtTime(time.Now().Add(years(50))) {
				t.Error("key not valid at all times")
			}
			if err := v.VerifySignature(bytesReader(tc.sig), bytesReader(msg)); err != nil {
				t.Errorf("signature does not verify: %v", err)
			}
			if err := v.VerifySignature(bytesReader(tc.sig), bytesReader([]byte("other"))); err == nil {
				t.Error("signature over another message verifies")
			}
		})
	}
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(p256)
	for name, data := range map[string][]byte{
		"RSA 1024":        keyPEM(t, &rsa1024.PublicKey),
		"P-224":           keyPEM(t, &p224.PublicKey),
		"private key":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		"two keys":        append(keyPEM(t, p256.Public()), keyPEM(t, p384.Public())...),
		"certificate":     []byte(testCertPEM),
		"empty":           nil,
		"bad key content": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
	} {
		if _, err := LoadPublicKey(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDescribeProduction(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Describe(productionRoot(t), now)
	if len(d.CertificateAuthorities) != 2 || d.CertificateAuthorities[0].Status != "ended" || d.CertificateAuthorities[1].Status != "active" {
		t.Errorf("CAs: %+v", d.CertificateAuthorities)
	}
	ca := d.CertificateAuthorities[1]
	if len(ca.Certificates) != 2 || ca.Certificates[0].Role != "intermediate" || ca.Certificates[1].Role != "root" ||
		ca.Certificates[1].Subject != "CN=sigstore,O=sigstore.dev" || ca.Certificates[1].KeyType != "ECDSA P-384" {
		t.Errorf("2022 CA: %+v", ca.Certificates)
	}
	if len(d.TimestampAuthorities) != 1 || d.TimestampAuthorities[0].Certificates[0].Role != "leaf" {
		t.Errorf("TSA: %+v", d.TimestampAuthorities)
	}
	var types []string
	for _, l := range d.TransparencyLogs {
		types = append(types, l.KeyType)
	}
	if strings.Join(types, ",") != "ECDSA P-256,Ed25519" {
		t.Errorf("tlog key types %v", types)
	}
	if d.TransparencyLogs[0].LogID != "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d" {
		t.Errorf("Rekor v1 log id %s", d.TransparencyLogs[0].LogID)
	}
	if len(d.CTLogs) != 2 {
		t.Errorf("CT logs %+v", d.CTLogs)
	}
}

func TestLogsAndTimestamps(t *testing.T) {
	tr := productionRoot(t)
	m := LogsAndTimestamps(tr)
	if len(m.FulcioCertificateAuthorities()) != 0 {
		t.Error("CAs leak through")
	}
	if _, err := m.PublicKeyVerifier("x"); err == nil {
		t.Error("keys leak through")
	}
	if len(m.RekorLogs()) != 2 || len(m.CTLogs()) != 2 || len(m.TimestampingAuthorities()) != 1 {
		t.Error("logs or TSAs missing")
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
