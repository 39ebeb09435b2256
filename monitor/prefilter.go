package monitor

import (
	"bytes"
	"encoding/base64"
)

// needles are bytes that the DER of every certificate of a watched
// identity holds (verify.CertificateMatcher.RequiredBytes): a certificate
// whose DER holds none of them is not a watched identity's, and is not
// parsed. nil when some identity names no such bytes.
type needles [][]byte

func newNeedles(required [][]byte) needles {
	var n needles
	for _, r := range required {
		if len(r) == 0 {
			return nil
		}
		n = append(n, r)
	}
	return n
}

// mayHold reports whether der may be a watched identity's certificate.
func (n needles) mayHold(der []byte) bool {
	if n == nil {
		return true
	}
	for _, s := range n {
		if bytes.Contains(der, s) {
			return true
		}
	}
	return false
}

// b64Needles find needles in a certificate's base64 without decoding it:
// wherever a needle sits in the DER, one of three base64 strings (the
// encodings of the needle from its first, second or third byte, cut to
// whole 3-byte groups) is in the base64 of the DER. nil when needles is
// nil or a needle is too short for three non-empty encodings.
type b64Needles [][]byte

func newB64Needles(n needles) b64Needles {
	var out b64Needles
	for _, r := range n {
		if len(r) < 5 {
			return nil
		}
		for s := range 3 {
			x := r[s:]
			x = x[:len(x)-len(x)%3]
			out = append(out, []byte(base64.StdEncoding.EncodeToString(x)))
		}
	}
	return out
}

// mayHold reports whether the DER whose base64 is b64 may hold a needle.
func (n b64Needles) mayHold(b64 []byte) bool {
	if n == nil {
		return true
	}
	for _, s := range n {
		if bytes.Contains(b64, s) {
			return true
		}
	}
	return false
}
