package monitor

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// identityView fills view with what identity matching by name reads
// (verify.CertificateMatcher.MayMatch: the SAN and OIDC issuer extensions
// and the raw subject), taken from the DER of a certificate without
// parsing the rest (keys, names, dates). It is not a parsed certificate:
// it serves only to decide, before the full parse, that a certificate
// cannot be a watched identity's (a view that does not match means the
// certificate does not; docs/MONITOR.md "Reading entries"). It reads the
// DER as crypto/x509 does for every certificate crypto/x509 parses
// (FuzzIdentityView), and reports false when the DER is not shaped as a
// certificate: the caller parses it fully then.
func identityView(der []byte, view *x509.Certificate) bool {
	*view = x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, Extensions: view.Extensions[:0]}
	cert, rest, ok := derElem(der, tagSequence)
	if !ok || len(rest) != 0 {
		return false
	}
	tbs, _, ok := derElem(cert, tagSequence)
	if !ok {
		return false
	}
	if len(tbs) > 0 && tbs[0] == 0xa0 { // version [0] EXPLICIT
		if _, tbs, ok = derElem(tbs, 0xa0); !ok {
			return false
		}
	}
	for _, tag := range []byte{0x02, tagSequence, tagSequence, tagSequence} { // serialNumber, signature, issuer, validity
		if _, tbs, ok = derElem(tbs, tag); !ok {
			return false
		}
	}
	subject := tbs
	if _, tbs, ok = derElem(tbs, tagSequence); !ok {
		return false
	}
	view.RawSubject = subject[:len(subject)-len(tbs)]
	if _, tbs, ok = derElem(tbs, tagSequence); !ok { // subjectPublicKeyInfo
		return false
	}
	for _, tag := range []byte{0x81, 0xa1, 0x82, 0xa2} { // issuerUniqueID, subjectUniqueID (either form)
		if len(tbs) > 0 && tbs[0] == tag {
			if _, tbs, ok = derElem(tbs, tag); !ok {
				return false
			}
		}
	}
	if len(tbs) == 0 {
		return true
	}
	exts, rest, ok := derElem(tbs, 0xa3)
	if !ok || len(rest) != 0 {
		return false
	}
	seq, rest, ok := derElem(exts, tagSequence)
	if !ok || len(rest) != 0 {
		return false
	}
	for len(seq) > 0 {
		var ext, oid, value []byte
		if ext, seq, ok = derElem(seq, tagSequence); !ok {
			return false
		}
		if oid, ext, ok = derElem(ext, 0x06); !ok {
			return false
		}
		e := pkix.Extension{Id: viewOID(oid)}
		if len(ext) > 0 && ext[0] == 0x01 { // critical BOOLEAN
			var b []byte
			if b, ext, ok = derElem(ext, 0x01); !ok || len(b) != 1 || (b[0] != 0 && b[0] != 0xff) {
				return false
			}
			e.Critical = b[0] == 0xff
		}
		if value, ext, ok = derElem(ext, 0x04); !ok || len(ext) != 0 {
			return false
		}
		if e.Id != nil {
			e.Value = value
			view.Extensions = append(view.Extensions, e)
		}
	}
	return true
}

const tagSequence = 0x30

// derElem reads one DER element of the given tag (a single identifier
// byte) from b: its contents and what follows it.
func derElem(b []byte, tag byte) (body, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != tag {
		return nil, nil, false
	}
	n, p := int(b[1]), 2
	if n&0x80 != 0 {
		k := n & 0x7f
		if k == 0 || k > 3 || len(b) < 2+k {
			return nil, nil, false
		}
		n = 0
		for _, c := range b[2 : 2+k] {
			n = n<<8 | int(c)
		}
		p += k
	}
	if len(b)-p < n {
		return nil, nil, false
	}
	return b[p : p+n], b[p+n:], true
}

// viewOID is the object identifier of an extension of an identity view,
// by its DER: the SAN and the Fulcio OIDC issuer (both versions); nil for
// another extension. (A switch, not a table: no work at start-up.)
func viewOID(der []byte) asn1.ObjectIdentifier {
	switch string(der) {
	case "\x55\x1d\x11":
		return cryptoutils.SANOID
	case "\x2b\x06\x01\x04\x01\x83\xbf\x30\x01\x01":
		return certificate.OIDIssuer
	case "\x2b\x06\x01\x04\x01\x83\xbf\x30\x01\x08":
		return certificate.OIDIssuerV2
	}
	return nil
}
