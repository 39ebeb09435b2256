package trustroot

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// FuzzLoadTrustedRoot feeds arbitrary bytes to the trusted-root loading
// path (ParseTrustedRoot, as LoadTrustedRootFile and Load use it), then to
// what runs on a loaded root: Describe, WithChainCache, and sigstore-go's
// serialization. Nothing may panic; a root that loads stays within the
// bounds.
func FuzzLoadTrustedRoot(f *testing.F) {
	if d := shareddata.Dir(); d != "" {
		for _, glob := range []string{
			"real-bundles/trusted-roots/*.json",
			"sigstore-conformance/*/trusted_root.json",
			"sigstore-conformance/_shared/*.json",
		} {
			matches, _ := filepath.Glob(filepath.Join(d, glob))
			for _, m := range matches {
				if b, err := os.ReadFile(m); err == nil {
					f.Add(b)
				}
			}
		}
	}
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[{"baseUrl":"https://r","hashAlgorithm":"SHA2_256","publicKey":{"rawBytes":"MCowBQYDK2VwAyEAu0Ej7oUMGd1e+Vy0mlgdybpa1LzqGYmqC5+43G4btXc=","keyDetails":"PKIX_ED25519","validFor":{"start":"2020-01-01T00:00:00Z"}},"logId":{"keyId":"AAAA"}}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrustedRoot(data)
		if err != nil {
			return
		}
		if len(tr.FulcioCertificateAuthorities()) > MaxEntries || len(tr.RekorLogs()) > MaxEntries ||
			len(tr.CTLogs()) > MaxEntries || len(tr.TimestampingAuthorities()) > MaxEntries {
			t.Fatal("a loaded root exceeds MaxEntries")
		}
		Describe(tr, time.Unix(1700000000, 0))
		c := WithChainCache(tr)
		if len(c.FulcioCertificateAuthorities()) < len(tr.FulcioCertificateAuthorities()) {
			t.Fatal("the chain cache lost an authority")
		}
		_, _ = tr.MarshalJSON()
	})
}

// FuzzParsePEM feeds arbitrary bytes to the PEM readers of LoadPKI and
// LoadPublicKey.
func FuzzParsePEM(f *testing.F) {
	f.Add([]byte(testCertPEM))
	f.Add([]byte(testCertPEM + testCertPEM))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAu0Ej7oUMGd1e+Vy0mlgdybpa1LzqGYmqC5+43G4btXc=\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if certs, err := ParseCertificatesPEM(data); err == nil {
			if len(certs) == 0 || len(certs) > MaxPEMCertificates {
				t.Fatalf("%d certificates", len(certs))
			}
			if tm, err := LoadPKI(data, nil); err == nil {
				for _, ca := range tm.FulcioCertificateAuthorities() {
					r := ca.(*root.FulcioCertificateAuthority).Root
					if !r.IsCA || r.KeyUsage != 0 && r.KeyUsage&x509.KeyUsageCertSign == 0 {
						t.Fatalf("LoadPKI accepted a root that may not issue certificates: %s", r.Subject)
					}
				}
			} else if !errors.Is(err, ErrNotCA) {
				t.Fatalf("LoadPKI refuses what ParseCertificatesPEM accepts, with no CA error: %v", err)
			}
		}
		if _, err := ParsePublicKeyPEM(data); err == nil {
			if _, err := LoadPublicKey(data); err != nil {
				t.Fatalf("ParsePublicKeyPEM accepts what LoadPublicKey refuses: %v", err)
			}
		}
	})
}

// testCertPEM is the public-good Fulcio root ("sigstore", 2021-2031).
const testCertPEM = `-----BEGIN CERTIFICATE-----
MIIB9zCCAXygAwIBAgIUALZNAPFdxHPwjeDloDwyYChAO/4wCgYIKoZIzj0EAwMw
KjEVMBMGA1UEChMMc2lnc3RvcmUuZGV2MREwDwYDVQQDEwhzaWdzdG9yZTAeFw0y
MTEwMDcxMzU2NTlaFw0zMTEwMDUxMzU2NThaMCoxFTATBgNVBAoTDHNpZ3N0b3Jl
LmRldjERMA8GA1UEAxMIc2lnc3RvcmUwdjAQBgcqhkjOPQIBBgUrgQQAIgNiAAT7
XeFT4rb3PQGwS4IajtLk3/OlnpgangaBclYpsYBr5i+4ynB07ceb3LP0OIOZdxex
X69c5iVuyJRQ+Hz05yi+UF3uBWAlHpiS5sh0+H2GHE7SXrk1EC5m1Tr19L9gg92j
YzBhMA4GA1UdDwEB/wQEAwIBBjAPBgNVHRMBAf8EBTADAQH/MB0GA1UdDgQWBBRY
wB5fkUWlZql6zJChkyLQKsXF+jAfBgNVHSMEGDAWgBRYwB5fkUWlZql6zJChkyLQ
KsXF+jAKBggqhkjOPQQDAwNpADBmAjEAj1nHeXZp+13NWBNa+EDsDP8G1WWg1tCM
WP/WHPqpaVo0jhsweNFZgSs0eE7wYI4qAjEA2WB9ot98sIkoF3vZYdd3/VtWB5b9
TNMea7Ix/stJ5TfcLLeABLE4BNJOsQ4vnBHJ
-----END CERTIFICATE-----
`
