package attest

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseIntegrity(t *testing.T) {
	sum := sha512.Sum512([]byte("x"))
	good := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	for _, tc := range []struct {
		in   string
		want string // hex of sha512, "" for a refusal
	}{
		{good, hex.EncodeToString(sum[:])},
		{"sha1-" + base64.StdEncoding.EncodeToString(sum[:20]), ""},
		{"sha512-" + base64.StdEncoding.EncodeToString(sum[:32]), ""},
		{"sha512-" + base64.RawStdEncoding.EncodeToString(sum[:]), ""},
		{"sha512-" + base64.URLEncoding.EncodeToString(sum[:]) + "!", ""},
		{good + " " + good, ""},
		{"SHA512-" + base64.StdEncoding.EncodeToString(sum[:]), ""},
		{"", ""},
	} {
		d, err := ParseIntegrity(tc.in)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "want sha512-BASE64") {
				t.Errorf("%q: %v, %v; want a refusal", tc.in, d, err)
			}
			continue
		}
		if err != nil || d["sha512"] != tc.want || len(d) != 1 {
			t.Errorf("%q: %v, %v", tc.in, d, err)
		}
	}
}

func FuzzParseIntegrity(f *testing.F) {
	f.Add("sha512-" + strings.Repeat("A", 86) + "==")
	f.Add("sha256-" + strings.Repeat("A", 43) + "=")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseIntegrity(s)
		if err != nil {
			return
		}
		for alg, h := range d {
			if want := map[string]int{"sha256": 64, "sha512": 128}[alg]; len(h) != want {
				t.Fatalf("%q: %s %s", s, alg, h)
			}
		}
	})
}
