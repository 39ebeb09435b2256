package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestUnicodeForms: a certificate or a token carries an identity in one
// Unicode form (NFC); an identity or a revocation written in another (the
// same name decomposed, NFD; a Kelvin sign for K) could never equal it, so
// a revocation in that form would silently revoke nothing. Both are refused
// at their JSON Pointer; NFC and plain ASCII pass.
func TestUnicodeForms(t *testing.T) {
	nfc, nfd := "jos\u00e9@corp.example", "jose\u0301@corp.example"
	kelvin := "\u212aey@corp.example" // KELVIN SIGN: NFC is "Key@…"
	sig := func(subject string) string {
		return `"servers":{"ex":{"identities":[{"method":"sigstore","issuer":"https://i.example","subject":"` + subject + `"}]}}`
	}
	tests := []struct {
		name, body string
		want       string // "" accepted
	}{
		{"revoked NFC", `"revoked":{"identities":["` + nfc + `"]}`, ""},
		{"revoked NFD", `"revoked":{"identities":["` + nfd + `"]}`, "/revoked/identities/0"},
		{"revoked Kelvin sign", `"revoked":{"identities":["` + kelvin + `"]}`, "/revoked/identities/0"},
		{"subject NFC", sig(nfc), ""},
		{"subject NFD", sig(nfd), "/servers/ex/identities/0/subject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, `{`+base+`,`+tt.body+`}`)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrNotCanonical) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "NFC") {
				t.Errorf("error %q: want ErrNotCanonical at %s, saying NFC", err, tt.want)
			}
		})
	}
}
