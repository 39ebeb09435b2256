package monitor

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseEntryRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"not JSON", `{`, ErrEntry},
		{"unknown member", `{"kind":"hashedrekord","apiVersion":"0.0.2","x":1}`, ErrEntry},
		{"other kind", `{"kind":"intoto","apiVersion":"0.0.2","spec":{}}`, ErrUnknownKind},
		{"v1 hashedrekord", `{"kind":"hashedrekord","apiVersion":"0.0.1","spec":{}}`, ErrUnknownKind},
		{"no digest", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"signature":{"content":"AA=="}}}}`, ErrEntry},
		{"no verifier", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA=="}}}}`, ErrEntry},
		{"bad certificate", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA==","verifier":{"x509Certificate":{"rawBytes":"AAAA"},"keyDetails":"PKIX_ECDSA_P256_SHA_256"}}}}}`, ErrEntry},
		{"dsse without signatures", `{"kind":"dsse","apiVersion":"0.0.2","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_256","digest":"AAAA"}}}}`, ErrEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEntry([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(`{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA==","verifier":{"publicKey":{"rawBytes":"AAAA"},"keyDetails":"PKIX_ED25519"}}}}}`))
	f.Add([]byte(`{"kind":"dsse","apiVersion":"0.0.2","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_256","digest":"AAAA"},"signatures":[]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEntry(data)
		if err != nil {
			if !errors.Is(err, ErrEntry) {
				t.Fatalf("error not ErrEntry: %v", err)
			}
			return
		}
		if e.Digest == "" || len(e.Signers) == 0 {
			t.Fatalf("accepted %+v", e)
		}
	})
}

// canonicalEntry is a hashedrekord 0.0.2 entry as the log writes it, with
// a self-signed certificate.
func canonicalEntry(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), EmailAddresses: []string{"a@example.com"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	return []byte(`{"apiVersion":"0.0.2","kind":"hashedrekord","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"` +
		b64(bytes.Repeat([]byte{1}, 32)) + `"},"signature":{"content":"MEUCIQ==","verifier":{"keyDetails":"PKIX_ECDSA_P256_SHA_256","x509Certificate":{"rawBytes":"` +
		b64(der) + `"}}}}}}`)
}

// TestScanEntry: the scanner reads the canonical forms as protojson does,
// and gives up on what it does not know.
func TestScanEntry(t *testing.T) {
	t.Parallel()
	real := canonicalEntry(t)
	dsse := `{"apiVersion":"0.0.2","kind":"dsse","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_384","digest":"AAAA"},"signatures":[{"content":"AA==","verifier":{"keyDetails":"PKIX_ED25519","publicKey":{"rawBytes":"AAAA"}}},{"content":"AA==","verifier":{"publicKey":{"rawBytes":"AQID"},"keyDetails":"PKIX_ED25519"}}]}}}`
	var s scanner
	if !s.scan(real) || s.e.kind != "hashedrekord" || len(s.e.signers) != 1 || !s.e.signers[0].cert || s.e.Digest() != "sha256:"+strings.Repeat("01", 32) {
		t.Fatalf("canonical hashedrekord: %+v", s.e)
	}
	if !s.scan([]byte(dsse)) || s.e.kind != "dsse" || len(s.e.signers) != 2 || s.e.signers[1].cert || s.e.Digest() != "sha384:000000" {
		t.Fatalf("canonical dsse: %+v", s.e)
	}
	if _, err := s.e.signers[1].decode(nil); err != nil || !bytes.Equal(s.e.signers[1].der, []byte{1, 2, 3}) {
		t.Fatalf("dsse key: %v %x", err, s.e.signers[1].der)
	}
	// JSON's whitespace between tokens, and an empty signature content,
	// which protojson reads too, are read.
	for _, in := range []string{
		" \t\r\n" + strings.NewReplacer(`:`, " :\t", `,`, "\n,\r", `{`, "{ ", `}`, " }", `[`, "[\n", `]`, "\t]").Replace(dsse) + "\n",
		strings.Replace(dsse, `"content":"AA=="`, `"content":""`, 1),
	} {
		if !s.scan([]byte(in)) || s.e.kind != "dsse" || len(s.e.signers) != 2 || s.e.Digest() != "sha384:000000" {
			t.Errorf("not scanned, or not as protojson reads it: %q: %+v", in, s.e)
		}
	}
	for _, bad := range []string{"AA\nA", "AA\rA", "AA\\A", "AAA\x00"} {
		sg := rawSigner{b64: []byte(strings.NewReplacer(`\n`, "\n", `\r`, "\r", `\x00`, "\x00").Replace(bad))}
		if _, err := sg.decode(nil); err == nil {
			t.Errorf("decoded %q", sg.b64)
		}
	}
	for _, in := range []string{
		strings.Replace(string(real), `"kind"`, `"kind":"dsse","kind"`, 1),          // duplicate member
		strings.Replace(string(real), `"apiVersion"`, `"api_version"`, 1),           // the proto name, which protojson reads too
		strings.Replace(string(real), `"SHA2_256"`, `"SHA2_\u0032\u0035\u0036"`, 1), // an escape
		// An escape in a certificate's base64, which protojson reads as
		// the same certificate: kept raw, the pre-filter would look for
		// the needles in "\u004dII…" and skip a watched identity's entry.
		// (four characters escaped: the length stays a multiple of 4).
		escapeRaw(string(real)),
		escapeRaw(dsse),
		strings.Replace(string(real), `"keyDetails":"PKIX_ECDSA_P256_SHA_256",`, ``, 1),
		strings.Replace(dsse, `"publicKey":{"rawBytes":"AAAA"}`, `"publicKey":{"rawBytes":"AAAA"},"x509Certificate":{"rawBytes":"AAAA"}`, 1),
		strings.Replace(dsse, `"AAAA"`, `"AAA"`, 1),                    // unpadded base64
		strings.Replace(dsse, `"rawBytes":"AAAA"`, `"rawBytes":""`, 1), // no key
		strings.Replace(dsse, `"digest":"AAAA"`, `"digest":""`, 1),     // no digest, which protojson's reader refuses
		string(real) + ` {}`,
		`{"apiVersion":"0.0.2","kind":"dsse","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_256","digest":"AAAA"},"signatures":[]}}}`,
	} {
		if s.scan([]byte(in)) {
			t.Errorf("scanned %s", in)
		}
	}
	// Every proper prefix of an entry is given up on, without a panic at
	// its end.
	for _, in := range []string{string(real), dsse} {
		for i := range len(in) {
			if s.scan([]byte(in[:i])) {
				t.Errorf("scanned the prefix %s", in[:i])
			}
		}
	}
}

// escapeRaw writes the first four characters of entry's first rawBytes
// as JSON escapes (\u00XX), which protojson decodes to the same string.
func escapeRaw(entry string) string {
	const at = `"rawBytes":"`
	i := strings.Index(entry, at) + len(at)
	var b strings.Builder
	for _, c := range entry[i : i+4] {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return entry[:i] + b.String() + entry[i+4:]
}

// FuzzScanEntry: whatever the scanner reads, protojson reads the same
// (or refuses only a certificate or key that does not parse, which the
// monitor parses when it is a watched signer's).
func FuzzScanEntry(f *testing.F) {
	f.Add(canonicalEntry(f))
	f.Add([]byte(`{"apiVersion":"0.0.2","kind":"dsse","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_384","digest":"AAAA"},"signatures":[{"content":"AA==","verifier":{"keyDetails":"PKIX_ED25519","publicKey":{"rawBytes":"AAAA"}}}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s scanner
		if !s.scan(data) {
			return
		}
		e, err := ParseEntry(data)
		decoded := true
		for i := range s.e.signers {
			if _, derr := s.e.signers[i].decode(nil); derr != nil {
				decoded = false
			}
		}
		if err != nil && !decoded {
			return // the monitor refuses it too when it decodes the signer
		}
		if err != nil {
			if !errors.Is(err, ErrEntry) || !(strings.Contains(err.Error(), ": certificate: ") || strings.Contains(err.Error(), ": public key: ")) {
				t.Fatalf("scanned, protojson: %v", err)
			}
			return
		}
		if e.Kind != s.e.kind || e.APIVersion != s.e.apiVersion || e.Digest != s.e.Digest() || len(e.Signers) != len(s.e.signers) {
			t.Fatalf("scanned %+v, protojson %+v", s.e, e)
		}
		for i, sg := range e.Signers {
			if _, err := s.e.signers[i].decode(nil); err != nil {
				t.Fatalf("protojson decodes signer %d, the scanner: %v", i, err)
			}
			raw := sg.PublicKey
			if sg.Certificate != nil {
				raw = sg.Certificate.Raw
			}
			if (sg.Certificate != nil) != s.e.signers[i].cert || !bytes.Equal(raw, s.e.signers[i].der) {
				t.Fatalf("signer %d differs", i)
			}
		}
	})
}

// TestSignerDecodeLineEnds: a verifier's base64 with line ends in it
// (which Go's decoder skips, and which no JSON string holds raw) is
// refused, not read as the DER without them; the same base64 without
// them decodes. (The scanner hands it only base64 of a length that is a
// multiple of 4.)
func TestSignerDecodeLineEnds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		b64 string
		ok  bool
	}{
		{"MAMCAQE=", true},
		{"MAMC\n\n\n\nAQE=", false},
		{"MAMCAQE=\r\n\r\n", false},
		{"\r\r\r\rMAMCAQE=", false},
	} {
		s := rawSigner{b64: []byte(c.b64)}
		_, err := s.decode(nil)
		if (err == nil) != c.ok || c.ok && !bytes.Equal(s.der, []byte{0x30, 3, 2, 1, 1}) {
			t.Errorf("%q: der %x, error %v; want ok %v", c.b64, s.der, err, c.ok)
		}
	}
}
