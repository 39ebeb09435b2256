package monitor

import (
	"encoding/base64"
	"encoding/pem"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// v1Bodies are Rekor v1 entry bodies of each kind the monitor reads,
// shaped as rekor-server v1.5.4 canonicalizes them, with a certificate
// (the kinds) and a key.
func v1Bodies(t testing.TB) (certPEM, keyPEM string, bodies map[string]string) {
	t.Helper()
	m := regexp.MustCompile(`"rawBytes":"([^"]+)"`).FindSubmatch(canonicalEntry(t))
	der, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	certPEM = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyPEM = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{0x30, 0}}))
	h := `{"algorithm":"sha256","value":"` + strings.Repeat("ab", 32) + `"}`
	return certPEM, keyPEM, map[string]string{
		"hashedrekord": `{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":` + h + `},"signature":{"content":"AA==","publicKey":{"content":"` + certPEM + `"}}}}`,
		"dsse":         `{"apiVersion":"0.0.1","kind":"dsse","spec":{"envelopeHash":` + h + `,"payloadHash":` + h + `,"signatures":[{"signature":"AA==","verifier":"` + certPEM + `"},{"signature":"AA==","verifier":"` + keyPEM + `"}]}}`,
		"intoto1":      `{"apiVersion":"0.0.1","kind":"intoto","spec":{"content":{"hash":` + h + `,"payloadHash":` + h + `},"publicKey":"` + certPEM + `"}}`,
		"intoto2":      `{"apiVersion":"0.0.2","kind":"intoto","spec":{"content":{"envelope":{"payloadType":"application/vnd.in-toto+json","signatures":[{"publicKey":"` + certPEM + `","sig":"AA=="}]},"hash":` + h + `,"payloadHash":` + h + `}}}`,
	}
}

func TestParseEntryV1(t *testing.T) {
	t.Parallel()
	_, _, bodies := v1Bodies(t)
	for name, body := range bodies {
		e, err := parseEntryV1([]byte(body))
		if err != nil || e.Digest() != "sha256:"+strings.Repeat("ab", 32) || len(e.signers) == 0 || !e.signers[0].cert || e.signers[0].der == nil {
			t.Errorf("%s: %+v %v", name, e, err)
		}
		if name == "dsse" && (len(e.signers) != 2 || e.signers[1].cert) {
			t.Errorf("dsse signers %+v", e.signers)
		}
	}
	// A body of maxEntryV1 bytes is read; one byte more is not.
	atBound := bodies["hashedrekord"] + strings.Repeat(" ", maxEntryV1-len(bodies["hashedrekord"]))
	if _, err := parseEntryV1([]byte(atBound)); err != nil {
		t.Errorf("a body of %d bytes: %v", maxEntryV1, err)
	}
	if _, err := parseEntryV1([]byte(atBound + " ")); !errors.Is(err, ErrEntry) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a body of %d bytes: %v, want refused for its size", maxEntryV1+1, err)
	}
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"not JSON", `{`, ErrEntry},
		{"rekord", `{"apiVersion":"0.0.1","kind":"rekord","spec":{}}`, ErrUnknownKind},
		{"no digest", strings.Replace(bodies["hashedrekord"], `"hash":{"algorithm":"sha256","value":"`+strings.Repeat("ab", 32)+`"}`, `"hash":{}`, 1), ErrEntry},
		{"md5", strings.Replace(bodies["hashedrekord"], `"sha256"`, `"md5"`, 1), ErrEntry},
		{"unknown algorithm, no digits", strings.Replace(bodies["hashedrekord"], `"algorithm":"sha256","value":"`+strings.Repeat("ab", 32)+`"`, `"algorithm":"md5","value":""`, 1), ErrEntry},
		{"upper-case hex", strings.Replace(bodies["hashedrekord"], strings.Repeat("ab", 32), strings.Repeat("AB", 32), 1), ErrEntry},
		{"no signature", `{"apiVersion":"0.0.1","kind":"dsse","spec":{"payloadHash":{"algorithm":"sha256","value":"` + strings.Repeat("ab", 32) + `"},"signatures":[]}}`, ErrEntry},
		{"not PEM", strings.Replace(bodies["intoto1"], `"publicKey":"`, `"publicKey":"AAAA`, 1), ErrEntry},
		{"private key", `{"apiVersion":"0.0.1","kind":"intoto","spec":{"content":{"payloadHash":{"algorithm":"sha256","value":"` + strings.Repeat("ab", 32) + `"}},"publicKey":"` +
			base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})) + `"}}`, ErrEntry},
	} {
		if _, err := parseEntryV1([]byte(tc.in)); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}

func FuzzParseEntryV1(f *testing.F) {
	_, _, bodies := v1Bodies(f)
	for _, b := range bodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseEntryV1(data)
		if err != nil {
			if !errors.Is(err, ErrEntry) {
				t.Fatalf("error not ErrEntry: %v", err)
			}
			return
		}
		if !validV1Digest(e.Digest()) || len(e.signers) == 0 {
			t.Fatalf("accepted %+v", e)
		}
		for _, s := range e.signers {
			if s.der == nil {
				t.Fatal("a signer without DER")
			}
		}
	})
}
