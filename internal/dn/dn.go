// Package dn writes and reads X.509 distinguished names in the one string
// form mcpsign shows and matches (docs/VERIFY.md, "Identity"): RFC 4514
// (RFC 2253) as `openssl x509 -noout -subject -nameopt RFC2253` prints it,
// taken from the certificate's DER (RawSubject, RawIssuer), never from
// crypto/x509/pkix.Name, which keeps one value per attribute type and
// reorders and flattens the RDNs.
//
// The form: every RDN, most significant (first in DER) last, separated by
// ','; the attributes of a multi-valued RDN separated by '+', in the reverse
// of their DER order (as OpenSSL prints them); no spaces around either. An
// attribute type is OpenSSL's short name where it has one of the names of
// this package's table (CN, O, OU, C, ST, L, serialNumber, emailAddress, DC,
// UID, …; case sensitive), else the dotted OID. A string value (UTF8String,
// PrintableString, IA5String, NumericString, T61String read as Latin-1,
// BMPString, UniversalString, VisibleString) is written as UTF-8 with ,+"\<>;
// escaped by a backslash, a leading '#' or space and a trailing space
// escaped by a backslash, and every byte of a control character or of a
// character beyond ASCII as \XX (upper-case hex). The value of a type
// outside the table, or one that is not a string, is '#' and the upper-case
// hex of its DER. The output is printable ASCII, and two names that differ
// in any RDN, attribute type or character differ in their string.
package dn

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Errors returned (wrapped) by Format and Canonical.
var (
	// ErrMalformed: the DER is not an X.501 Name, or a string value is not
	// valid in its type (invalid UTF-8, a surrogate).
	ErrMalformed = errors.New("malformed distinguished name")
	// ErrSyntax: a string is not a distinguished name in the form of this
	// package.
	ErrSyntax = errors.New("distinguished name syntax")
)

// entry is one attribute of a name with the index of its RDN.
type entry struct {
	oid   asn1.ObjectIdentifier
	value asn1.RawValue
	rdn   int
}

// Format returns the DER Name der (a certificate's RawSubject or
// RawIssuer) in the form of the package doc.
func Format(der []byte) (string, error) {
	ents, err := parseDER(der)
	if err != nil {
		return "", err
	}
	slices.Reverse(ents)
	return formatEntries(ents)
}

// String is Format for display: when der cannot be formatted it returns
// '#' and the upper-case hex of der, which no formatted name equals.
func String(der []byte) string {
	s, err := Format(der)
	if err != nil {
		return "#" + strings.ToUpper(hex.EncodeToString(der))
	}
	return s
}

// Canonical parses s strictly as a distinguished name written as RFC 4514
// allows (types by the names of the table or dotted OIDs; values as escaped
// strings or '#' and hex DER) and returns it in the form of the package
// doc, RDNs and attributes in the order written. A name s given in that
// form is returned unchanged; one written otherwise (spaces after ',',
// a lower-case type name, a dotted OID that has a name, a hex escape where
// a backslash would do, a character beyond ASCII unescaped) comes back in
// the form the certificate's name is compared in.
func Canonical(s string) (string, error) {
	ents, err := parseString(s)
	if err != nil {
		return "", err
	}
	return formatEntries(ents)
}

func parseDER(der []byte) ([]entry, error) {
	malformed := func(what string) error { return fmt.Errorf("%w: %s", ErrMalformed, what) }
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil {
		return nil, malformed(err.Error())
	}
	if len(rest) > 0 || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, malformed("not a SEQUENCE of RDNs")
	}
	var ents []entry
	body := seq.Bytes
	for rdn := 0; len(body) > 0; rdn++ {
		var set asn1.RawValue
		if body, err = asn1.Unmarshal(body, &set); err != nil {
			return nil, malformed(err.Error())
		}
		if set.Class != asn1.ClassUniversal || set.Tag != asn1.TagSet || !set.IsCompound || len(set.Bytes) == 0 {
			return nil, malformed("an RDN is not a non-empty SET")
		}
		for sb := set.Bytes; len(sb) > 0; {
			var atv asn1.RawValue
			if sb, err = asn1.Unmarshal(sb, &atv); err != nil {
				return nil, malformed(err.Error())
			}
			if atv.Class != asn1.ClassUniversal || atv.Tag != asn1.TagSequence || !atv.IsCompound {
				return nil, malformed("an attribute is not a SEQUENCE")
			}
			var e entry
			r, err := asn1.Unmarshal(atv.Bytes, &e.oid)
			if err != nil {
				return nil, malformed("attribute type: " + err.Error())
			}
			if r, err = asn1.Unmarshal(r, &e.value); err != nil {
				return nil, malformed("attribute value: " + err.Error())
			}
			if len(r) > 0 {
				return nil, malformed("trailing data in an attribute")
			}
			e.rdn = rdn
			ents = append(ents, e)
		}
	}
	return ents, nil
}

func formatEntries(ents []entry) (string, error) {
	var b strings.Builder
	for i, e := range ents {
		if i > 0 {
			if ents[i-1].rdn == e.rdn {
				b.WriteByte('+')
			} else {
				b.WriteByte(',')
			}
		}
		oid := e.oid.String()
		name, known := attributeNames.Get()[oid]
		if !known {
			name = oid
		}
		b.WriteString(name)
		b.WriteByte('=')
		runes, isString, err := decodeString(e.value)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrMalformed, name, err)
		}
		if !known || !isString {
			b.WriteByte('#')
			b.WriteString(strings.ToUpper(hex.EncodeToString(e.value.FullBytes)))
			continue
		}
		writeEscaped(&b, runes)
	}
	return b.String(), nil
}

// decodeString returns the characters of a string value, as OpenSSL reads
// them; isString is false for a value of another type.
func decodeString(v asn1.RawValue) (runes []rune, isString bool, err error) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return nil, false, nil
	}
	b := v.Bytes
	switch v.Tag {
	case asn1.TagUTF8String:
		if !utf8.Valid(b) {
			return nil, true, errors.New("invalid UTF-8 in a UTF8String")
		}
		return []rune(string(b)), true, nil
	case asn1.TagNumericString, asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String,
		asn1.TagUTCTime, asn1.TagGeneralizedTime, 26: // 26: VisibleString
		runes = make([]rune, len(b))
		for i, c := range b {
			runes[i] = rune(c)
		}
		return runes, true, nil
	case asn1.TagBMPString:
		if len(b)%2 != 0 {
			return nil, true, errors.New("BMPString of odd length")
		}
		for i := 0; i < len(b); i += 2 {
			r := rune(b[i])<<8 | rune(b[i+1])
			if r >= 0xD800 && r <= 0xDFFF {
				return nil, true, errors.New("surrogate in a BMPString")
			}
			runes = append(runes, r)
		}
		return runes, true, nil
	case 28: // UniversalString
		if len(b)%4 != 0 {
			return nil, true, errors.New("UniversalString of a length not a multiple of 4")
		}
		for i := 0; i < len(b); i += 4 {
			r := rune(b[i])<<24 | rune(b[i+1])<<16 | rune(b[i+2])<<8 | rune(b[i+3])
			if r < 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
				return nil, true, errors.New("invalid character in a UniversalString")
			}
			runes = append(runes, r)
		}
		return runes, true, nil
	}
	return nil, false, nil
}

const hexDigits = "0123456789ABCDEF"

// writeEscaped writes a string value escaped as OpenSSL's RFC2253 option
// does (esc_2253, esc_ctrl, esc_msb, utf8).
func writeEscaped(b *strings.Builder, runes []rune) {
	var buf [utf8.UTFMax]byte
	for i, r := range runes {
		n := utf8.EncodeRune(buf[:], r)
		for _, c := range buf[:n] {
			switch {
			case c >= 0x80 || c < 0x20 || c == 0x7f:
				b.WriteByte('\\')
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&15])
			case strings.IndexByte(`,+"\<>;`, c) >= 0,
				i == 0 && (c == '#' || c == ' '),
				i == len(runes)-1 && c == ' ':
				b.WriteByte('\\')
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
	}
}

// maxArcDigits bounds an OID arc written in a string (the arcs are ints).
const maxArcDigits = 9

func parseString(s string) ([]entry, error) {
	syntax := func(at int, format string, args ...any) error {
		return fmt.Errorf("%w: at byte %d of %s: %s", ErrSyntax, at, textsafe.RawQuote(s), fmt.Sprintf(format, args...))
	}
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrSyntax)
	}
	var ents []entry
	for i, rdn := 0, 0; ; {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, syntax(i, "an attribute without '='")
		}
		// Spaces around a type are read (RFC 2253 readers allow them after
		// a separator) so that the canonical form shows they do not belong.
		oid, err := parseType(strings.Trim(s[i:i+eq], " "))
		if err != nil {
			return nil, syntax(i, "%v", err)
		}
		i += eq + 1
		v, n, err := parseValue(s[i:])
		if err != nil {
			return nil, syntax(i, "%v", err)
		}
		i += n
		ents = append(ents, entry{oid: oid, value: v, rdn: rdn})
		if i == len(s) {
			return ents, nil
		}
		if s[i] == ',' {
			rdn++
		}
		i++ // ',' or '+': parseValue stops only there
		if i == len(s) {
			return nil, syntax(i, "nothing after the last separator")
		}
	}
}

func parseType(t string) (asn1.ObjectIdentifier, error) {
	if t == "" {
		return nil, errors.New("an empty attribute type")
	}
	if oid := oidOfName(t); oid != "" {
		t = oid
	} else if t[0] < '0' || t[0] > '9' {
		return nil, fmt.Errorf("unknown attribute type %s: write OpenSSL's short name (CN, O, OU, …) or the dotted OID", textsafe.RawQuote(t))
	}
	arcs := strings.Split(t, ".")
	if len(arcs) < 2 {
		return nil, fmt.Errorf("attribute type %s: an OID has at least two arcs", textsafe.RawQuote(t))
	}
	oid := make(asn1.ObjectIdentifier, len(arcs))
	for k, a := range arcs {
		if a == "" || len(a) > maxArcDigits || (len(a) > 1 && a[0] == '0') || strings.Trim(a, "0123456789") != "" {
			return nil, fmt.Errorf("attribute type %s is not a dotted OID", textsafe.RawQuote(t))
		}
		oid[k], _ = strconv.Atoi(a)
	}
	if oid[0] > 2 || (oid[0] < 2 && oid[1] >= 40) {
		return nil, fmt.Errorf("attribute type %s is not a valid OID", textsafe.RawQuote(t))
	}
	return oid, nil
}

// parseValue reads one attribute value up to an unescaped ',' or '+' or
// the end, and returns it as DER with the number of bytes read.
func parseValue(s string) (asn1.RawValue, int, error) {
	if strings.HasPrefix(s, "#") {
		end := strings.IndexAny(s, ",+")
		if end < 0 {
			end = len(s)
		}
		der, err := hex.DecodeString(s[1:end])
		if err != nil || len(der) == 0 {
			return asn1.RawValue{}, 0, errors.New("'#' must be followed by the hex DER of the value")
		}
		var v asn1.RawValue
		rest, err := asn1.Unmarshal(der, &v)
		if err != nil || len(rest) > 0 {
			return asn1.RawValue{}, 0, errors.New("the hex after '#' is not one DER value")
		}
		return v, end, nil
	}
	var val []byte
	i := 0
	for ; i < len(s) && s[i] != ',' && s[i] != '+'; i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return asn1.RawValue{}, 0, errors.New("a value ends in a lone backslash")
			}
			if strings.IndexByte(`,+"\<>;#= `, s[i+1]) >= 0 {
				val = append(val, s[i+1])
				i++
				continue
			}
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return asn1.RawValue{}, 0, errors.New(`a backslash must be followed by one of ,+"\<>;#= or two hex digits`)
			}
			h, _ := hex.DecodeString(s[i+1 : i+3])
			val = append(val, h[0])
			i += 2
		case c < 0x20 || c == 0x7f:
			return asn1.RawValue{}, 0, errors.New(`a control character must be written \XX`)
		default:
			val = append(val, c)
		}
	}
	if !utf8.Valid(val) {
		return asn1.RawValue{}, 0, errors.New("the value is not UTF-8")
	}
	full, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: val})
	if err != nil {
		return asn1.RawValue{}, 0, err
	}
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: val, FullBytes: full}, i, nil
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// Text returns a name as Format writes it for a terminal: unchanged when it
// is printable ASCII (a formatted name always is, and its escapes are its
// own, so a second escaping would double its backslashes), else, for a
// string that did not come from Format, escaped by textsafe.
func Text(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return textsafe.Escape(s)
		}
	}
	return s
}
