package monitor

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"regexp"
	"slices"
	"testing"
)

// FuzzIdentityView: for every certificate Go parses, the identity view has
// the same extensions and subject (so a view that does not match a watched
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
		view, ok := identityView(der)
		if !ok {
			t.Fatal("Go parses the certificate, the identity view does not")
		}
		if !bytes.Equal(view.RawSubject, cert.RawSubject) || !slices.EqualFunc(view.Extensions, cert.Extensions, func(a, b pkix.Extension) bool {
			return a.Id.Equal(b.Id) && a.Critical == b.Critical && bytes.Equal(a.Value, b.Value)
		}) {
			t.Fatalf("view %+v, certificate %+v", view.Extensions, cert.Extensions)
		}
	})
}
