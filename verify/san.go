package verify

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// sanKind is the type of a subject alternative name (RFC 5280 GeneralName).
type sanKind int

const (
	sanOther     sanKind = iota // IP address, directoryName, another otherName, …
	sanEmail                    // rfc822Name
	sanDNS                      // dNSName
	sanURI                      // uniformResourceIdentifier
	sanFulcio                   // otherName 1.3.6.1.4.1.57264.1.7 (Fulcio's username SAN)
	sanOtherName                // an otherName of another type
)

func (k sanKind) String() string {
	switch k {
	case sanEmail:
		return "e-mail"
	case sanDNS:
		return "DNS"
	case sanURI:
		return "URI"
	case sanFulcio:
		return "otherName " + certificate.OIDOtherName.String()
	case sanOtherName:
		return "otherName"
	}
	return "other"
}

// san is one subject alternative name as the certificate encodes it: the
// IA5String of an e-mail, DNS or URI name byte for byte (not Go's parsed
// URL), the UTF8String of Fulcio's otherName.
type san struct {
	kind  sanKind
	value string
}

// errSAN: the SAN extension cannot be read (Go's parser has accepted it,
// so this is an otherName that is not well-formed).
var errSAN = errors.New("malformed subject alternative name")

// parseSANs returns a certificate's SANs in their order in the extension,
// with their types.
func parseSANs(cert *x509.Certificate) ([]san, error) {
	i := slices.IndexFunc(cert.Extensions, func(e pkix.Extension) bool { return e.Id.Equal(cryptoutils.SANOID) })
	if i < 0 {
		return nil, nil
	}
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(cert.Extensions[i].Value, &seq)
	if err != nil || len(rest) > 0 || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, fmt.Errorf("%w: not a SEQUENCE of GeneralNames", errSAN)
	}
	var out []san
	for body := seq.Bytes; len(body) > 0; {
		var gn asn1.RawValue
		if body, err = asn1.Unmarshal(body, &gn); err != nil {
			return nil, fmt.Errorf("%w: %w", errSAN, err)
		}
		if gn.Class != asn1.ClassContextSpecific {
			return nil, fmt.Errorf("%w: a GeneralName that is not context-specific", errSAN)
		}
		s := san{kind: sanOther}
		switch gn.Tag {
		case 0:
			// OtherName ::= SEQUENCE { type-id OID, value [0] EXPLICIT ANY }
			var on struct {
				ID    asn1.ObjectIdentifier
				Value asn1.RawValue
			}
			if r, err := asn1.UnmarshalWithParams(gn.FullBytes, &on, "tag:0"); err != nil || len(r) > 0 ||
				on.Value.Class != asn1.ClassContextSpecific || on.Value.Tag != 0 || !on.Value.IsCompound {
				return nil, fmt.Errorf("%w: an otherName that is not well-formed", errSAN)
			}
			s.kind = sanOtherName
			if on.ID.Equal(certificate.OIDOtherName) {
				var v string
				if r, err := asn1.UnmarshalWithParams(on.Value.Bytes, &v, "utf8"); err != nil || len(r) > 0 {
					return nil, fmt.Errorf("%w: Fulcio's otherName is not a UTF8String", errSAN)
				}
				s = san{kind: sanFulcio, value: v}
			}
		case 1:
			s = san{kind: sanEmail, value: string(gn.Bytes)}
		case 2:
			s = san{kind: sanDNS, value: string(gn.Bytes)}
		case 6:
			s = san{kind: sanURI, value: string(gn.Bytes)}
		}
		if gn.IsCompound != (gn.Tag == 0 || gn.Tag == 3 || gn.Tag == 4 || gn.Tag == 5) {
			return nil, fmt.Errorf("%w: GeneralName [%d] of the wrong form", errSAN, gn.Tag)
		}
		out = append(out, s)
	}
	return out, nil
}

// asciiEqualFold compares ASCII case-insensitively and every other byte
// exactly (strings.EqualFold would fold U+212A KELVIN SIGN to k).
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// uriEqual compares two URIs as RFC 3986 (6.2.2.1) allows without
// normalizing anything else: the scheme and the host case-insensitively,
// the rest (userinfo, port, path, query, fragment, percent-encodings)
// byte for byte.
func uriEqual(a, b string) bool {
	sa, ra, okA := cutScheme(a)
	sb, rb, okB := cutScheme(b)
	if !okA || !okB {
		return a == b
	}
	if !asciiEqualFold(sa, sb) {
		return false
	}
	aa, pa, hasA := cutAuthority(ra)
	ab, pb, hasB := cutAuthority(rb)
	if hasA != hasB || pa != pb {
		return false
	}
	if !hasA {
		return ra == rb
	}
	ua, ha, porta := splitAuthority(aa)
	ub, hb, portb := splitAuthority(ab)
	return ua == ub && porta == portb && asciiEqualFold(ha, hb)
}

// cutScheme splits "scheme:rest" where scheme is RFC 3986's
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func cutScheme(u string) (scheme, rest string, ok bool) {
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		case i > 0 && (('0' <= c && c <= '9') || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return u[:i], u[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// cutAuthority splits "//authority/path?query#fragment" into the
// authority and the rest.
func cutAuthority(rest string) (authority, tail string, ok bool) {
	if len(rest) < 2 || rest[:2] != "//" {
		return "", rest, false
	}
	rest = rest[2:]
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '?' || c == '#' {
			return rest[:i], rest[i:], true
		}
	}
	return rest, "", true
}

// splitAuthority splits "userinfo@host:port" (host may be an IP literal in
// brackets).
func splitAuthority(a string) (userinfo, host, port string) {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		userinfo, a = a[:i+1], a[i+1:]
	}
	host = a
	if j := strings.LastIndexByte(a, ':'); j >= 0 && strings.LastIndexByte(a, ']') < j {
		host, port = a[:j], a[j:]
	}
	return userinfo, host, port
}
