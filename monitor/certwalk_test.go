package monitor

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"regexp"
	"slices"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// FuzzIdentityView: for every certificate Go parses, the identity view has
// the same SAN and issuer extensions and subject (so a view that does not match a watched
// identity means that the certificate does not either).
func FuzzIdentityView(f *testing.F) {
	m := regexp.MustCompile(`"rawBytes":"([^"]+)"`).FindSubmatch(canonicalEntry(f))
	der, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(der)
	f.Fuzz(func(t *testing.T, der []byte) {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		view := &x509.Certificate{}
		if !identityView(der, view) {
			t.Fatal("Go parses the certificate, the identity view does not")
		}
		kept := slices.DeleteFunc(slices.Clone(cert.Extensions), func(e pkix.Extension) bool {
			return !slices.ContainsFunc([]asn1.ObjectIdentifier{cryptoutils.SANOID, certificate.OIDIssuer, certificate.OIDIssuerV2}, e.Id.Equal)
		})
		if !bytes.Equal(view.RawSubject, cert.RawSubject) || !slices.EqualFunc(view.Extensions, kept, func(a, b pkix.Extension) bool {
			return a.Id.Equal(b.Id) && a.Critical == b.Critical && bytes.Equal(a.Value, b.Value)
		}) {
			t.Fatalf("view %+v, certificate %+v", view.Extensions, cert.Extensions)
		}
	})
}
