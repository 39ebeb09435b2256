package monitor

import (
	"crypto/x509"
	"crypto/x509/pkix"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// identityView is a certificate with only what identity matching reads
// (verify.CertificateMatcher: the extensions and the raw subject), taken
// from the DER without parsing the rest (keys, names, dates). It is not a
// parsed certificate: it serves only to decide, before the full parse,
// that a certificate cannot be a watched identity's (a view that does not
// match means the certificate does not; docs/MONITOR.md "Reading
// entries"). ok is false when the DER is not shaped as a certificate: the
// caller parses it fully then.
func identityView(der []byte) (view *x509.Certificate, ok bool) {
	in := cryptobyte.String(der)
	var cert, tbs, subject cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !in.Empty() || !cert.ReadASN1(&tbs, cbasn1.SEQUENCE) {
		return nil, false
	}
	if !tbs.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!tbs.SkipASN1(cbasn1.INTEGER) || // serialNumber
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // signature
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // issuer
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // validity
		!tbs.ReadASN1Element(&subject, cbasn1.SEQUENCE) ||
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // subjectPublicKeyInfo
		!tbs.SkipOptionalASN1(cbasn1.Tag(1).ContextSpecific()) ||
		!tbs.SkipOptionalASN1(cbasn1.Tag(2).ContextSpecific()) {
		return nil, false
	}
	view = &x509.Certificate{RawSubject: subject, KeyUsage: x509.KeyUsageDigitalSignature}
	var present bool
	var exts cryptobyte.String
	if !tbs.ReadOptionalASN1(&exts, &present, cbasn1.Tag(3).Constructed().ContextSpecific()) || !tbs.Empty() {
		return nil, false
	}
	if !present {
		return view, true
	}
	var seq cryptobyte.String
	if !exts.ReadASN1(&seq, cbasn1.SEQUENCE) || !exts.Empty() {
		return nil, false
	}
	for !seq.Empty() {
		var ext, value cryptobyte.String
		var e pkix.Extension
		if !seq.ReadASN1(&ext, cbasn1.SEQUENCE) || !ext.ReadASN1ObjectIdentifier(&e.Id) {
			return nil, false
		}
		if ext.PeekASN1Tag(cbasn1.BOOLEAN) && !ext.ReadASN1Boolean(&e.Critical) {
			return nil, false
		}
		if !ext.ReadASN1(&value, cbasn1.OCTET_STRING) || !ext.Empty() {
			return nil, false
		}
		e.Value = value
		view.Extensions = append(view.Extensions, e)
	}
	return view, true
}
