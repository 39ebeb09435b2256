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

// tlv is one DER element of tag holding the concatenated parts (short and
// long form lengths).
func tlv(tag byte, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	switch n := len(body); {
	case n < 0x80:
		return append([]byte{tag, byte(n)}, body...)
	case n < 0x100:
		return append([]byte{tag, 0x81, byte(n)}, body...)
	case n < 0x10000:
		return append([]byte{tag, 0x82, byte(n >> 8), byte(n)}, body...)
	default:
		return append([]byte{tag, 0x83, byte(n >> 16), byte(n >> 8), byte(n)}, body...)
	}
}

// TestIdentityViewShapes: the identity view of certificates cut or shaped
// at each place it reads: an empty TBS, one with no extensions (ending after
// its key, with the unique IDs or without), an extension that has its
// identifier only, an explicit criticality (DER's FALSE, TRUE, and a byte
// that is neither), an empty extension value, elements of each length form.
// None panics; a view read has the subject and the SAN with its
// criticality.
func TestIdentityViewShapes(t *testing.T) {
	t.Parallel()
	san := []byte("\x06\x03\x55\x1d\x11")
	sanValue := tlv(0x04, tlv(tagSequence, tlv(0x86, []byte("https://github.com/acme/x"))))
	unknown := tlv(0x06, []byte{0x2a, 0x03, 0x04})
	subject := tlv(tagSequence, tlv(0x31, tlv(tagSequence, tlv(0x06, []byte{0x55, 0x04, 0x03}), tlv(0x0c, []byte("acme")))))
	head := [][]byte{
		tlv(0xa0, tlv(0x02, []byte{2})), // version v3
		tlv(0x02, []byte{1}),            // serialNumber
		tlv(tagSequence, tlv(0x06, []byte{0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02})), // ecdsa-with-SHA256
		tlv(tagSequence), // issuer
		tlv(tagSequence, tlv(0x17, []byte("700101000000Z")), tlv(0x17, []byte("700101000000Z"))),
		subject,
		tlv(tagSequence, tlv(tagSequence, tlv(0x06, []byte{1})), tlv(0x03, []byte{0})), // subjectPublicKeyInfo
	}
	cert := func(rest ...[]byte) []byte {
		return tlv(tagSequence, tlv(tagSequence, append(slices.Clone(head), rest...)...), tlv(tagSequence), tlv(0x03, []byte{0}))
	}
	exts := func(e ...[]byte) []byte { return tlv(0xa3, tlv(tagSequence, e...)) }
	long := tlv(0x04, bytes.Repeat([]byte{'a'}, 200)) // long-form length, one byte
	tests := []struct {
		name     string
		der      []byte
		ok       bool
		critical []bool // of the SAN extensions kept, in order
	}{
		{name: "empty", der: nil},
		{name: "empty certificate", der: tlv(tagSequence)},
		{name: "empty TBS", der: tlv(tagSequence, tlv(tagSequence))},
		{name: "TBS of a version only", der: tlv(tagSequence, tlv(tagSequence, head[0]))},
		{name: "trailing byte", der: append(cert(), 0)},
		{name: "no extensions, ends after the key", der: cert(), ok: true},
		{name: "unique IDs, no extensions", der: cert(tlv(0x81, []byte{0}), tlv(0xa2, tlv(0x03, []byte{0}))), ok: true},
		{name: "unique ID cut", der: cert([]byte{0x81, 0x05, 0}), ok: false},
		{name: "extension of an identifier only", der: cert(exts(tlv(tagSequence, san)))},
		{name: "extension without an identifier", der: cert(exts(tlv(tagSequence, sanValue)))},
		{name: "critical FALSE", der: cert(exts(tlv(tagSequence, san, tlv(0x01, []byte{0}), sanValue))), ok: true, critical: []bool{false}},
		{name: "critical TRUE", der: cert(exts(tlv(tagSequence, san, tlv(0x01, []byte{0xff}), sanValue))), ok: true, critical: []bool{true}},
		{name: "critical neither", der: cert(exts(tlv(tagSequence, san, tlv(0x01, []byte{1}), sanValue)))},
		{name: "critical of two bytes", der: cert(exts(tlv(tagSequence, san, tlv(0x01, []byte{0xff, 0xff}), sanValue)))},
		{name: "critical empty", der: cert(exts(tlv(tagSequence, san, tlv(0x01), sanValue)))},
		{name: "empty value of another extension", der: cert(exts(tlv(tagSequence, unknown, tlv(0x04)))), ok: true},
		{name: "value followed by a byte", der: cert(exts(tlv(tagSequence, san, sanValue, []byte{5, 0})))},
		{name: "long-form value and SAN", der: cert(exts(tlv(tagSequence, unknown, long), tlv(tagSequence, san, sanValue))), ok: true, critical: []bool{false}},
		{name: "extensions then a byte", der: cert(exts(tlv(tagSequence, san, sanValue)), []byte{0})},
		{name: "extensions sequence then a byte", der: cert(tlv(0xa3, tlv(tagSequence, tlv(tagSequence, san, sanValue)), []byte{5, 0}))},
		{name: "extensions of another tag", der: cert(tlv(0xa4, tlv(tagSequence)))},
		{name: "long form of three bytes", der: cert(exts(tlv(tagSequence, unknown, tlv(0x04, make([]byte, 70000))), tlv(tagSequence, san, sanValue))), ok: true, critical: []bool{false}},
		{name: "long form of length zero", der: cert(exts(tlv(tagSequence, unknown, []byte{0x04, 0x81, 0}))), ok: true},
		{name: "long form of four bytes", der: []byte{tagSequence, 0x84, 0, 0, 0, 0}},
		{name: "long form of zero bytes", der: []byte{tagSequence, 0x80}},
		{name: "long form cut", der: []byte{tagSequence, 0x82, 0}},
		{name: "length past the end", der: []byte{tagSequence, 0x03, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			view := &x509.Certificate{}
			if got := identityView(tt.der, view); got != tt.ok {
				t.Fatalf("identityView = %v, want %v", got, tt.ok)
			}
			if !tt.ok {
				return
			}
			if !bytes.Equal(view.RawSubject, subject) {
				t.Errorf("RawSubject %x, want %x", view.RawSubject, subject)
			}
			var critical []bool
			for _, e := range view.Extensions {
				if !e.Id.Equal(cryptoutils.SANOID) || !bytes.Equal(e.Value, sanValue[2:]) {
					t.Errorf("extension %v %x, want the SAN", e.Id, e.Value)
				}
				critical = append(critical, e.Critical)
			}
			if !slices.Equal(critical, tt.critical) {
				t.Errorf("criticality %v, want %v", critical, tt.critical)
			}
		})
	}
}
