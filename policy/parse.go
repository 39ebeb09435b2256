package policy

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// maxString bounds every string member.
const maxString = 4096

type parser struct {
	dir string
}

// fail returns an ErrSyntax error at the JSON pointer at.
func (p *parser) fail(at, format string, args ...any) error {
	if at == "" {
		at = "/"
	}
	return fmt.Errorf("%w: %s: %s", ErrSyntax, at, fmt.Sprintf(format, args...))
}

// failAs is fail wrapping kind too (ErrDuplicate, ErrNotCanonical).
func (p *parser) failAs(at string, kind error, format string, args ...any) error {
	if at == "" {
		at = "/"
	}
	return fmt.Errorf("%w: %s: %w: %s", ErrSyntax, at, kind, fmt.Sprintf(format, args...))
}

// object reads the object v at at, refusing members not in known.
func (p *parser) object(v []byte, at string, known ...string) (map[string][]byte, error) {
	names, vals, err := digest.Members(v)
	if err != nil {
		return nil, p.fail(at, "%v", err)
	}
	if err := p.knownNames(names, at, known...); err != nil {
		return nil, err
	}
	return vals, nil
}

// knownNames refuses, for the object at at, a member name not in known and
// a case variant of one (digest.CheckCaseVariants).
func (p *parser) knownNames(names []string, at string, known ...string) error {
	if err := digest.CheckCaseVariants(names, known...); err != nil {
		return p.fail(at, "%v", err)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("%w: %s: %w %s (known: %s)", ErrSyntax, orRoot(at), ErrUnknownMember, textsafe.RawQuote(n), strings.Join(known, ", "))
		}
	}
	return nil
}

func orRoot(at string) string {
	if at == "" {
		return "/"
	}
	return at
}

func (p *parser) str(v []byte, at string) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", p.fail(at, "want a string, not %s", truncate(v))
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", p.fail(at, "%v", err)
	}
	if s == "" {
		return "", p.fail(at, "is empty")
	}
	if len(s) > maxString {
		return "", p.fail(at, "longer than %d bytes", maxString)
	}
	return s, nil
}

// comment accepts a "$comment": a string or an array of strings.
func (p *parser) comment(v []byte, at string) error {
	if len(v) > 0 && v[0] == '[' {
		items, err := digest.Elements(v)
		if err != nil {
			return p.fail(at, "%v", err)
		}
		for i, it := range items {
			if _, err := p.str(it, at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := p.str(v, at)
	return err
}

// path reads a path, relative ones resolved against the policy's directory.
func (p *parser) path(v []byte, at string) (string, error) {
	s, err := p.str(v, at)
	if err != nil {
		return "", err
	}
	if strings.ContainsRune(s, 0) {
		return "", p.fail(at, "contains a NUL byte")
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return filepath.Clean(s), nil
}

func (p *parser) array(v []byte, at string, max int) ([][]byte, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, p.fail(at, "want an array, not %s", truncate(v))
	}
	items, err := digest.Elements(v)
	if err != nil {
		return nil, p.fail(at, "%v", err)
	}
	if len(items) > max {
		return nil, p.fail(at, "more than %d elements", max)
	}
	return items, nil
}

// server reads a server entry (or the defaults) at at: its members
// (serverTable), then what holds between them.
func (p *parser) server(v []byte, at string) (Server, error) {
	var s Server
	if err := serverTable().object(p, v, at, &s); err != nil {
		return s, err
	}
	if n := len(s.Identities) + s.RepositorySigner.count(); s.Threshold != nil && s.Identities != nil && *s.Threshold > n {
		return s, p.fail(at+"/threshold", "%d of %d identities can never be met", *s.Threshold, n)
	}
	return s, nil
}

// identities reads a server's "identities".
func (p *parser) identities(v []byte, at string, s *Server) error {
	items, err := p.array(v, at, MaxIdentities)
	if err != nil {
		return err
	}
	s.Identities = []Identity{}
	for i, it := range items {
		id, err := p.identity(it, at+"/"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		// The same identity twice can never count twice (docs/POLICY.md
		// "Canonical forms"); a key given twice under two PEM encodings
		// is refused when the key files are read (File.LoadKeys).
		for j, prev := range s.Identities {
			if prev.same(id) {
				return p.failAs(id.at, ErrDuplicate, "the same identity as %s/%d: it can never count twice", at, j)
			}
		}
		s.Identities = append(s.Identities, id)
	}
	return nil
}

// require reads a server's "require".
func (p *parser) require(v []byte, at string, s *Server) error {
	items, err := p.array(v, at, 2)
	if err != nil {
		return err
	}
	tl, ts := false, false
	for i, it := range items {
		r, err := p.str(it, at+"/"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		switch {
		case r == "tlog" && !tl:
			tl = true
		case r == "timestamp" && !ts:
			ts = true
		case r == "tlog" || r == "timestamp":
			return p.fail(at+"/"+strconv.Itoa(i), "%s repeated", textsafe.RawQuote(r))
		default:
			return p.fail(at+"/"+strconv.Itoa(i), "%s: want \"tlog\" or \"timestamp\"", textsafe.RawQuote(r))
		}
	}
	s.RequireTlog, s.RequireTimestamp = &tl, &ts
	return nil
}

// bundle reads a server's "bundle".
func (p *parser) bundle(v []byte, at string, s *Server) error {
	str, err := p.str(v, at)
	if err != nil {
		return err
	}
	var b Bundle
	switch {
	case str == "server":
		b = Bundle{Kind: BundleServer}
	case strings.Contains(str, "://"):
		if !validBundleURL(str) {
			return p.fail(at, "%s: a URL must be https:// with a host and no user information", textsafe.RawQuote(str))
		}
		b = Bundle{Kind: BundleURL, Location: str}
	default:
		path, err := p.path(v, at)
		if err != nil {
			return err
		}
		b = Bundle{Kind: BundleFile, Location: path}
	}
	s.Bundle = &b
	return nil
}

func (p *parser) enum(v []byte, at string, allowed ...string) (string, error) {
	s, err := p.str(v, at)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", p.fail(at, "%s: want one of %s", textsafe.RawQuote(s), strings.Join(allowed, ", "))
	}
	return s, nil
}

// identity reads one identity at at: its "method", then the members of
// that method's table (identityTables), in order.
func (p *parser) identity(v []byte, at string) (Identity, error) {
	id := Identity{at: at}
	var all []string
	for _, m := range identityMethods {
		all = append(all, identityTables()[m].names()...)
	}
	names, vals, err := digest.Members(v)
	if err != nil {
		return id, p.fail(at, "%v", err)
	}
	if err := digest.CheckCaseVariants(names, all...); err != nil {
		return id, p.fail(at, "%v", err)
	}
	mv, ok := vals["method"]
	if !ok {
		return id, p.fail(at, "missing member \"method\" (sigstore, key or certificate)")
	}
	method, err := p.enum(mv, at+"/method", "sigstore", "key", "certificate")
	if err != nil {
		return id, err
	}
	id.Method = verify.Method(method)
	if err := identityTables()[id.Method].object(p, v, at, &id); err != nil {
		return id, err
	}
	if id.Method == verify.MethodKey {
		return id, nil
	}
	if id.Method == verify.MethodSigstore && id.Identity.Issuer != "" {
		if err := p.canonicalURL(id.Identity.Issuer, at+"/issuer"); err != nil {
			return id, err
		}
	}
	if id.Identity.SAN != "" && id.Identity.SANRegexp != "" || id.Identity.Issuer != "" && id.Identity.IssuerRegexp != "" {
		return id, p.fail(at, "give the exact value or the regexp, not both")
	}
	pol := verify.Policy{Method: id.Method, Identities: []verify.Identity{id.Identity}}
	if err := pol.CheckIdentity(); err != nil {
		return id, p.fail(at, "%v", err)
	}
	return id, nil
}

// revokedList is a list of "revoked": at most MaxRevoked distinct strings
// in canonical form, each one check accepts (want says what it wants).
func revokedList(name string, field func(*Revoked) *[]string, check func(string) bool, want string) member[Revoked] {
	return member[Revoked]{name: name, read: func(p *parser, v []byte, at string, r *Revoked) error {
		items, err := p.array(v, at, MaxRevoked)
		if err != nil {
			return err
		}
		var out []string
		for i, it := range items {
			ati := at + "/" + strconv.Itoa(i)
			s, err := p.str(it, ati)
			if err != nil {
				return err
			}
			if err := p.canonicalText(s, ati); err != nil {
				return err
			}
			if !check(s) {
				return p.fail(ati, "%s: want %s", textsafe.RawQuote(s), want)
			}
			// Revocations compare under Unicode simple case folding (Revoked.Check):
			// two entries equal so are one.
			if j := slices.IndexFunc(out, func(o string) bool { return strings.EqualFold(o, s) }); j >= 0 {
				return p.failAs(ati, ErrDuplicate, "%s repeats %s/%d", textsafe.RawQuote(s), at, j)
			}
			out = append(out, s)
		}
		*field(r) = out
		return nil
	}}
}

// canonicalText refuses an identity string that can never equal what a
// verification reports: one with white space at either end, or a control
// character anywhere (docs/POLICY.md "Canonical forms").
func (p *parser) canonicalText(s, at string) error {
	if s == "" {
		return nil
	}
	if strings.TrimSpace(s) != s {
		return p.failAs(at, ErrNotCanonical, "%s has white space at its start or end, which no signer's identity has", textsafe.RawQuote(s))
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return p.failAs(at, ErrNotCanonical, "%s contains a control character", textsafe.RawQuote(s))
	}
	// Certificates and tokens carry names composed (NFC); identities and
	// revocations compare without normalizing, so another form (a letter
	// and a combining accent, a Kelvin sign for K) would never equal the
	// signer's, and a revocation so written would revoke nothing.
	if !norm.NFC.IsNormalString(s) {
		return p.failAs(at, ErrNotCanonical, "%s is not in Unicode normal form C (NFC), the form certificates and tokens carry: write %s", textsafe.RawQuote(s), textsafe.RawQuote(norm.NFC.String(s)))
	}
	return nil
}

// canonicalURL refuses an OIDC issuer URL whose scheme or host is not in
// lower case: issuers are compared exactly (as OpenID Connect compares them), and
// a token's iss is written in lower case, so another spelling never matches.
func (p *parser) canonicalURL(s, at string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil // not a URL: compared exactly as written
	}
	if i := strings.Index(s, "://"); i < 0 || s[:i] != strings.ToLower(s[:i]) || u.Host != strings.ToLower(u.Host) {
		return p.failAs(at, ErrNotCanonical, "%s: write the scheme and host in lower case, as the issuer's tokens name it (issuers are compared exactly)", textsafe.RawQuote(s))
	}
	return nil
}

// canonicalRevokedIdentity reports whether s, a revoked identity, is in
// canonical form: anything that looks like a key ID (a sha256: prefix in
// any case, or 64 hex digits alone) must be written exactly as mcpsign
// writes key IDs, "sha256:" and 64 lowercase hex digits.
func canonicalRevokedIdentity(s string) bool {
	if len(s) >= 7 && strings.EqualFold(s[:7], "sha256:") || len(s) == 64 && isHex(s) {
		return digest.ValidDigest(s)
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// truncate shows at most 40 bytes of a value in an error, quoted.
func truncate(v []byte) string {
	s := string(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return textsafe.RawQuote(s)
}
