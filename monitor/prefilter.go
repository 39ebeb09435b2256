package monitor

import (
	"bytes"
	"encoding/base64"
)

// prefilter skips, without parsing, the entries that cannot be signed by a
// watched identity: each identity names bytes every certificate it matches
// holds in its DER (verify.CertificateMatcher.RequiredBytes), and an entry
// holds its certificate in standard base64. Whatever the needle's offset in
// the DER, one of three base64 strings (the encodings of the needle from
// its first, second or third byte, cut to whole 3-byte groups) then appears
// in the entry. An entry with a backslash (a JSON escape could hide a base64
// character) is always parsed.
type prefilter struct {
	needles [][]byte
}

// newPrefilter returns nil when some identity has no required bytes, or
// they are too short for three non-empty encodings.
func newPrefilter(required [][]byte) *prefilter {
	p := &prefilter{}
	for _, r := range required {
		if len(r) < 5 {
			return nil
		}
		for s := range 3 {
			n := r[s:]
			n = n[:len(n)-len(n)%3]
			p.needles = append(p.needles, []byte(base64.StdEncoding.EncodeToString(n)))
		}
	}
	if len(p.needles) == 0 {
		return nil
	}
	return p
}

// mayMatch reports whether entry must be parsed.
func (p *prefilter) mayMatch(entry []byte) bool {
	if p == nil || bytes.IndexByte(entry, '\\') >= 0 {
		return true
	}
	for _, n := range p.needles {
		if bytes.Contains(entry, n) {
			return true
		}
	}
	return false
}
