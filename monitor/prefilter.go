package monitor

import "bytes"

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
