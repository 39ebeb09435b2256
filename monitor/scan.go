package monitor

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
)

// rawEntry is what the monitor reads of one entry before deciding whether
// a watched signer made it: the DER of its certificates and keys, not yet
// parsed.
type rawEntry struct {
	kind, apiVersion string
	// digest is "alg:HEX", or empty until Digest makes it from alg and sum.
	digest  string
	alg     string
	sum     []byte
	signers []rawSigner
	// integrated is the log's time of the entry (Rekor v1), or nil.
	integrated *time.Time
}

// Digest is the logged artifact digest, "sha256:HEX".
func (e *rawEntry) Digest() string {
	if e.digest == "" {
		e.digest = e.alg + ":" + hex.EncodeToString(e.sum)
	}
	return e.digest
}

// rawSigner is one verifier of an entry: a certificate or a PKIX public
// key, as standard base64 (b64, decoded by der when needed) or as DER.
type rawSigner struct {
	cert bool
	b64  []byte
	der  []byte
}

// decode decodes s.b64 into s.der, with buf as the space (appended to and
// returned).
func (s *rawSigner) decode(buf []byte) ([]byte, error) {
	if s.der != nil {
		return buf, nil
	}
	start := len(buf)
	buf = slices.Grow(buf, base64.StdEncoding.DecodedLen(len(s.b64)))
	out := buf[start : start+base64.StdEncoding.DecodedLen(len(s.b64))]
	n, err := base64.StdEncoding.Strict().Decode(out, s.b64)
	if err == nil && n != decodedLen(s.b64) {
		err = errors.New("line ends in base64")
	}
	if err != nil {
		return buf, err
	}
	s.der = out[:n:n]
	return buf[:start+n], nil
}

// decodedLen is the length of the padded base64 b decoded, when it holds
// no line ends (which a decoder skips).
func decodedLen(b []byte) int {
	n := len(b) / 4 * 3
	for i := len(b) - 1; i >= 0 && i >= len(b)-2 && b[i] == '='; i-- {
		n--
	}
	return n
}

// scanner reads a Rekor v2 entry in one pass (docs/MONITOR.md "Reading
// entries"). It understands exactly the canonical form the log writes:
// the members of Entry, Spec, HashOutput, Signature, Verifier and their
// JSON names, strings without escapes, standard padded base64, known enum
// names, no duplicate member, no null. Anything else makes it give up
// (ok false), and the caller parses the entry with protojson instead, so
// that what the scanner accepts protojson accepts and reads the same
// (FuzzScanEntry checks it). The certificates and keys stay base64 until
// the checker needs them (rawSigner.decode, which also refuses what
// protojson would). buf holds the decoded bytes, reused from one entry to
// the next.
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
			alg, ok = hashNames.Get()[protocommon.HashAlgorithm(a)]
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
	s.e.alg, s.e.sum = alg, sum
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
			v, ok := s.str()
			seenRaw, signer = true, rawSigner{cert: cert, b64: v}
			return ok && len(v) > 0 && len(v)%4 == 0
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

// str reads a string up to the next quote and returns its bytes (a
// subslice of the entry). It gives up on an escape (a backslash), which
// protojson decodes: a certificate's base64 is looked at raw by the
// pre-filter, before anything decodes it, so "\u004dII…" would hide a
// watched identity's certificate. It checks neither UTF-8 nor control
// characters: every string the scanner keeps is compared with ASCII
// names or decoded as base64, which refuses any control character but
// the line ends that rawSigner.decode refuses (and a control character
// in a string is no JSON that protojson, or a verifier, reads).
func (s *scanner) str() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	n := bytes.IndexByte(s.b[s.p:], '"')
	if n < 0 || bytes.IndexByte(s.b[s.p:s.p+n], '\\') >= 0 {
		return nil, false
	}
	v := s.b[s.p : s.p+n]
	s.p += n + 1
	return v, true
}

// bytes reads a standard, padded base64 string and decodes it into buf
// (the digests and signatures, which are short).
func (s *scanner) bytes() ([]byte, bool) {
	v, ok := s.str()
	if !ok || len(v)%4 != 0 {
		return nil, false
	}
	start := len(s.buf)
	var err error
	sg := rawSigner{b64: v}
	if s.buf, err = sg.decode(s.buf); err != nil {
		return nil, false
	}
	return s.buf[start:], true
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
