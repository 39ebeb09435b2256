package monitor

import (
	"encoding/base64"
	"encoding/hex"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
)

// rawEntry is what the monitor reads of one entry before deciding whether
// a watched signer made it: the DER of its certificates and keys, not yet
// parsed.
type rawEntry struct {
	kind, apiVersion string
	digest           string
	signers          []rawSigner
}

// rawSigner is one verifier of an entry: the DER of a certificate or of a
// PKIX public key.
type rawSigner struct {
	cert bool
	der  []byte
}

// scanner reads a Rekor v2 entry in one pass (docs/MONITOR.md "Reading
// entries"). It understands exactly the canonical form the log writes:
// the members of Entry, Spec, HashOutput, Signature, Verifier and their
// JSON names, strings without escapes, standard padded base64, known enum
// names, no duplicate member, no null. Anything else makes it give up
// (ok false), and the caller parses the entry with protojson instead, so
// that what the scanner accepts protojson accepts and reads the same
// (FuzzScanEntry checks it). buf holds the decoded bytes, reused from one
// entry to the next.
type scanner struct {
	b   []byte
	p   int
	buf []byte
	e   rawEntry
}

// scan reads data into s.e; the DER slices it holds are valid until the
// next scan.
func (s *scanner) scan(data []byte) bool {
	s.b, s.p, s.buf = data, 0, s.buf[:0]
	s.e = rawEntry{signers: s.e.signers[:0]}
	// The DER slices point into buf: size it first so that it does not move.
	if cap(s.buf) < len(data) {
		s.buf = make([]byte, 0, len(data))
	}
	var seen uint8
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "kind":
			return s.once(&seen, 1) && s.knownString(&s.e.kind)
		case "apiVersion":
			return s.once(&seen, 2) && s.knownString(&s.e.apiVersion)
		case "spec":
			return s.once(&seen, 4) && s.spec()
		}
		return false
	})
	if !ok || seen != 7 {
		return false
	}
	s.ws()
	return s.p == len(s.b)
}

func (s *scanner) once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (s *scanner) spec() bool {
	n := 0
	ok := s.object(func(k []byte) bool {
		n++
		switch string(k) {
		case "hashedRekordV002":
			if s.e.kind != "hashedrekord" || s.e.apiVersion != "0.0.2" {
				return false
			}
			var seen uint8
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "data":
					return s.once(&seen, 1) && s.hash()
				case "signature":
					return s.once(&seen, 2) && s.signature()
				}
				return false
			}) && seen == 3
		case "dsseV002":
			if s.e.kind != "dsse" || s.e.apiVersion != "0.0.2" {
				return false
			}
			var seen uint8
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "payloadHash":
					return s.once(&seen, 1) && s.hash()
				case "signatures":
					return s.once(&seen, 2) && s.array(s.signature)
				}
				return false
			}) && seen == 3 && len(s.e.signers) > 0
		}
		return false
	})
	return ok && n == 1
}

func (s *scanner) hash() bool {
	var seen uint8
	var alg string
	var sum []byte
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "algorithm":
			v, ok := s.str()
			if !ok || !s.once(&seen, 1) {
				return false
			}
			a, known := protocommon.HashAlgorithm_value[string(v)]
			alg, ok = hashNames[protocommon.HashAlgorithm(a)]
			return known && ok
		case "digest":
			var ok bool
			sum, ok = s.bytes()
			return ok && s.once(&seen, 2) && len(sum) > 0
		}
		return false
	})
	if !ok || seen != 3 {
		return false
	}
	s.e.digest = alg + ":" + hex.EncodeToString(sum)
	return true
}

func (s *scanner) signature() bool {
	var seen uint8
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "content":
			_, ok := s.bytes()
			return ok && s.once(&seen, 1)
		case "verifier":
			return s.once(&seen, 2) && s.verifier()
		}
		return false
	}) && seen == 3
}

func (s *scanner) verifier() bool {
	var seen uint8
	var signer rawSigner
	raw := func(cert bool) bool {
		var seenRaw bool
		return s.object(func(k []byte) bool {
			if string(k) != "rawBytes" || seenRaw {
				return false
			}
			der, ok := s.bytes()
			seenRaw, signer = true, rawSigner{cert: cert, der: der}
			return ok && len(der) > 0
		}) && seenRaw
	}
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "keyDetails":
			v, ok := s.str()
			_, known := protocommon.PublicKeyDetails_value[string(v)]
			return ok && known && s.once(&seen, 1)
		case "x509Certificate":
			return s.once(&seen, 2) && raw(true)
		case "publicKey":
			return s.once(&seen, 4) && raw(false)
		}
		return false
	})
	// keyDetails and exactly one of the oneof.
	if !ok || (seen != 3 && seen != 5) {
		return false
	}
	s.e.signers = append(s.e.signers, signer)
	return true
}

// knownString reads a string into *dst (copied once; the entry kinds and
// versions are short).
func (s *scanner) knownString(dst *string) bool {
	v, ok := s.str()
	if !ok {
		return false
	}
	switch string(v) {
	case "hashedrekord":
		*dst = "hashedrekord"
	case "dsse":
		*dst = "dsse"
	case "0.0.2":
		*dst = "0.0.2"
	default:
		return false
	}
	return true
}

func (s *scanner) ws() {
	for s.p < len(s.b) {
		switch s.b[s.p] {
		case ' ', '\t', '\n', '\r':
			s.p++
		default:
			return
		}
	}
}

func (s *scanner) lit(c byte) bool {
	s.ws()
	if s.p < len(s.b) && s.b[s.p] == c {
		s.p++
		return true
	}
	return false
}

// str reads a string without escapes or control characters and returns
// its bytes (a subslice of the entry). It does not check UTF-8: every
// string the scanner keeps is compared with ASCII or decoded as base64.
func (s *scanner) str() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	start := s.p
	for s.p < len(s.b) {
		c := s.b[s.p]
		switch {
		case c == '"':
			s.p++
			return s.b[start : s.p-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.p++
	}
	return nil, false
}

// bytes reads a standard, padded base64 string and decodes it into buf.
func (s *scanner) bytes() ([]byte, bool) {
	v, ok := s.str()
	if !ok || len(v)%4 != 0 {
		return nil, false
	}
	n := base64.StdEncoding.DecodedLen(len(v))
	if len(s.buf)+n > cap(s.buf) {
		return nil, false // cannot happen: the decoded bytes are shorter than the entry
	}
	out := s.buf[len(s.buf) : len(s.buf)+n]
	m, err := base64.StdEncoding.Strict().Decode(out, v)
	if err != nil {
		return nil, false
	}
	s.buf = s.buf[:len(s.buf)+m]
	return out[:m:m], true
}

// object reads an object with at least one member, calling member for
// each key with the scanner at the value.
func (s *scanner) object(member func(k []byte) bool) bool {
	if !s.lit('{') {
		return false
	}
	for {
		k, ok := s.str()
		if !ok || !s.lit(':') || !member(k) {
			return false
		}
		if s.lit('}') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// array reads a non-empty array of elements.
func (s *scanner) array(elem func() bool) bool {
	if !s.lit('[') {
		return false
	}
	for {
		if !elem() {
			return false
		}
		if s.lit(']') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}
