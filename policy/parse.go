package policy

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/verify"
)

// The members of each object, exactly as the format names them (the JSON
// Schema, policy/schema.json, lists the same: TestSchemaMembers).
var (
	topMembers      = []string{"kind", "policyVersion", "$comment", "trust", "defaults", "servers", "revoked"}
	trustMembers    = []string{"$comment", "trustedRoot", "tuf", "caRoots", "caIntermediates"}
	tufMembers      = []string{"mirror", "cache"}
	serverMembers   = []string{"$comment", "identities", "threshold", "require", "maxBundleAge", "bundle", "package", "lock", "mode", "unsigned", "rollForward", "resources", "audit", "clientCapabilities", "repositorySigner", "serverRequests"}
	sigstoreMembers = []string{"method", "issuer", "issuerRegexp", "subject", "subjectRegexp", "sourceRepository", "sourceRef", "workflowSha", "workflowTrigger", "workflowName"}
	keyMembers      = []string{"method", "key"}
	certMembers     = []string{"method", "subject", "san", "sanRegexp", "email", "uri", "dns", "issuer"}
	revokedMembers  = []string{"$comment", "bundles", "definitions", "identities"}
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
			return fmt.Errorf("%w: %s: %w %s (known: %s)", ErrSyntax, orRoot(at), ErrUnknownMember, strconv.Quote(n), strings.Join(known, ", "))
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

func (p *parser) trust(v []byte) (Trust, error) {
	var t Trust
	m, err := p.object(v, "/trust", trustMembers...)
	if err != nil {
		return t, err
	}
	if x, ok := m["$comment"]; ok {
		if err := p.comment(x, "/trust/$comment"); err != nil {
			return t, err
		}
	}
	if x, ok := m["trustedRoot"]; ok {
		if t.TrustedRoot, err = p.path(x, "/trust/trustedRoot"); err != nil {
			return t, err
		}
	}
	if x, ok := m["tuf"]; ok {
		if t.TrustedRoot != "" {
			return t, p.fail("/trust/tuf", "give trustedRoot or tuf, not both")
		}
		tm, err := p.object(x, "/trust/tuf", tufMembers...)
		if err != nil {
			return t, err
		}
		if y, ok := tm["mirror"]; ok {
			if t.TUFMirror, err = p.str(y, "/trust/tuf/mirror"); err != nil {
				return t, err
			}
			if !validBundleURL(t.TUFMirror) {
				return t, p.fail("/trust/tuf/mirror", "%s is not an https URL", strconv.Quote(t.TUFMirror))
			}
		}
		if y, ok := tm["cache"]; ok {
			if t.TUFCache, err = p.path(y, "/trust/tuf/cache"); err != nil {
				return t, err
			}
		}
	}
	if x, ok := m["caRoots"]; ok {
		if t.CARoots, err = p.path(x, "/trust/caRoots"); err != nil {
			return t, err
		}
	}
	if x, ok := m["caIntermediates"]; ok {
		if t.CARoots == "" {
			return t, p.fail("/trust/caIntermediates", "intermediates without caRoots")
		}
		if t.CAIntermediates, err = p.path(x, "/trust/caIntermediates"); err != nil {
			return t, err
		}
	}
	return t, nil
}

func (p *parser) server(v []byte, at string) (Server, error) {
	var s Server
	m, err := p.object(v, at, serverMembers...)
	if err != nil {
		return s, err
	}
	if x, ok := m["$comment"]; ok {
		if err := p.comment(x, at+"/$comment"); err != nil {
			return s, err
		}
	}
	if x, ok := m["identities"]; ok {
		items, err := p.array(x, at+"/identities", MaxIdentities)
		if err != nil {
			return s, err
		}
		s.Identities = []Identity{}
		for i, it := range items {
			id, err := p.identity(it, at+"/identities/"+strconv.Itoa(i))
			if err != nil {
				return s, err
			}
			// The same identity twice can never count twice (docs/POLICY.md
			// "Canonical forms"); a key given twice under two PEM encodings
			// is refused when the key files are read (File.LoadKeys).
			for j, prev := range s.Identities {
				if prev.same(id) {
					return s, p.failAs(id.at, ErrDuplicate, "the same identity as %s/identities/%d: it can never count twice", at, j)
				}
			}
			s.Identities = append(s.Identities, id)
		}
	}
	if x, ok := m["repositorySigner"]; ok {
		if s.RepositorySigner, err = p.repositorySigner(x, at+"/repositorySigner"); err != nil {
			return s, err
		}
	}
	if x, ok := m["threshold"]; ok {
		n, err := strconv.Atoi(string(x))
		if err != nil || n < 1 || n > MaxIdentities || string(x) != strconv.Itoa(n) {
			return s, p.fail(at+"/threshold", "want an integer from 1 to %d, not %s", MaxIdentities, truncate(x))
		}
		if s.Identities != nil && n > len(s.Identities)+s.RepositorySigner.count() {
			return s, p.fail(at+"/threshold", "%d of %d identities can never be met", n, len(s.Identities)+s.RepositorySigner.count())
		}
		s.Threshold = &n
	}
	if x, ok := m["require"]; ok {
		items, err := p.array(x, at+"/require", 2)
		if err != nil {
			return s, err
		}
		tl, ts := false, false
		for i, it := range items {
			r, err := p.str(it, at+"/require/"+strconv.Itoa(i))
			if err != nil {
				return s, err
			}
			switch {
			case r == "tlog" && !tl:
				tl = true
			case r == "timestamp" && !ts:
				ts = true
			case r == "tlog" || r == "timestamp":
				return s, p.fail(at+"/require/"+strconv.Itoa(i), "%s repeated", strconv.Quote(r))
			default:
				return s, p.fail(at+"/require/"+strconv.Itoa(i), "%s: want \"tlog\" or \"timestamp\"", strconv.Quote(r))
			}
		}
		s.RequireTlog, s.RequireTimestamp = &tl, &ts
	}
	if x, ok := m["maxBundleAge"]; ok {
		str, err := p.str(x, at+"/maxBundleAge")
		if err != nil {
			return s, err
		}
		d, err := time.ParseDuration(str)
		if err != nil || d <= 0 {
			return s, p.fail(at+"/maxBundleAge", "%s: want a positive Go duration such as \"720h\"", strconv.Quote(str))
		}
		s.MaxBundleAge = &d
	}
	if x, ok := m["bundle"]; ok {
		str, err := p.str(x, at+"/bundle")
		if err != nil {
			return s, err
		}
		var b Bundle
		switch {
		case str == "server":
			b = Bundle{Kind: BundleServer}
		case strings.Contains(str, "://"):
			if !validBundleURL(str) {
				return s, p.fail(at+"/bundle", "%s: a URL must be https:// with a host and no user information", strconv.Quote(str))
			}
			b = Bundle{Kind: BundleURL, Location: str}
		default:
			path, err := p.path(x, at+"/bundle")
			if err != nil {
				return s, err
			}
			b = Bundle{Kind: BundleFile, Location: path}
		}
		s.Bundle = &b
	}
	if x, ok := m["package"]; ok {
		str, err := p.str(x, at+"/package")
		if err != nil {
			return s, err
		}
		if !strings.HasPrefix(str, "pkg:") || !strings.Contains(str[4:], "/") {
			return s, p.fail(at+"/package", "%s: want a purl (pkg:TYPE/NAMESPACE/NAME@VERSION)", strconv.Quote(str))
		}
		s.Package = &str
	}
	if x, ok := m["lock"]; ok {
		if at == "/defaults" {
			return s, p.fail(at+"/lock", "a lock is per server (the default is keyed by the server's name)")
		}
		path, err := p.path(x, at+"/lock")
		if err != nil {
			return s, err
		}
		s.Lock = &path
	}
	if x, ok := m["mode"]; ok {
		str, err := p.enum(x, at+"/mode", "block", "warn", "audit")
		if err != nil {
			return s, err
		}
		md := Mode(str)
		s.Mode = &md
	}
	if x, ok := m["unsigned"]; ok {
		str, err := p.enum(x, at+"/unsigned", "refuse", "tofu")
		if err != nil {
			return s, err
		}
		u := Unsigned(str)
		s.Unsigned = &u
	}
	if x, ok := m["rollForward"]; ok {
		str, err := p.enum(x, at+"/rollForward", "signed", "manual")
		if err != nil {
			return s, err
		}
		rf := RollForward(str)
		s.RollForward = &rf
	}
	if x, ok := m["resources"]; ok {
		str, err := p.enum(x, at+"/resources", "pass", "pin", "hide")
		if err != nil {
			return s, err
		}
		rs := Resources(str)
		s.Resources = &rs
	}
	if x, ok := m["audit"]; ok {
		path, err := p.path(x, at+"/audit")
		if err != nil {
			return s, err
		}
		s.Audit = &path
	}
	if x, ok := m["clientCapabilities"]; ok {
		caps, err := digest.CanonicalClientCapabilities(x)
		if err != nil {
			return s, p.fail(at+"/clientCapabilities", "%v", err)
		}
		b := []byte(caps)
		s.ClientCapabilities = &b
	}
	if x, ok := m["serverRequests"]; ok {
		if s.ServerRequests, err = p.serverRequests(x, at+"/serverRequests"); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (p *parser) enum(v []byte, at string, allowed ...string) (string, error) {
	s, err := p.str(v, at)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", p.fail(at, "%s: want one of %s", strconv.Quote(s), strings.Join(allowed, ", "))
	}
	return s, nil
}

func (p *parser) identity(v []byte, at string) (Identity, error) {
	id := Identity{at: at}
	all := append(append(append([]string{}, sigstoreMembers...), keyMembers...), certMembers...)
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
	known := map[verify.Method][]string{verify.MethodSigstore: sigstoreMembers, verify.MethodKey: keyMembers, verify.MethodCertificate: certMembers}[id.Method]
	m, err := p.object(v, at, known...)
	if err != nil {
		return id, err
	}
	get := func(name string) (string, error) {
		x, ok := m[name]
		if !ok {
			return "", nil
		}
		return p.str(x, at+"/"+name)
	}
	fields := map[string]*string{}
	switch id.Method {
	case verify.MethodKey:
		x, ok := m["key"]
		if !ok {
			return id, p.fail(at, "missing member \"key\": the PEM public key file")
		}
		if id.Key, err = p.path(x, at+"/key"); err != nil {
			return id, err
		}
		return id, nil
	case verify.MethodSigstore:
		fields = map[string]*string{"issuer": &id.Identity.Issuer, "issuerRegexp": &id.Identity.IssuerRegexp,
			"subject": &id.Identity.SAN, "subjectRegexp": &id.Identity.SANRegexp,
			"sourceRepository": &id.Identity.GitHubWorkflowRepository, "sourceRef": &id.Identity.GitHubWorkflowRef,
			"workflowSha": &id.Identity.GitHubWorkflowSHA, "workflowTrigger": &id.Identity.GitHubWorkflowTrigger,
			"workflowName": &id.Identity.GitHubWorkflowName}
	case verify.MethodCertificate:
		fields = map[string]*string{"subject": &id.Identity.Subject, "san": &id.Identity.SAN, "sanRegexp": &id.Identity.SANRegexp,
			"email": &id.Identity.Email, "uri": &id.Identity.URI, "dns": &id.Identity.DNS, "issuer": &id.Identity.Issuer}
	}
	for name, dst := range fields {
		if *dst, err = get(name); err != nil {
			return id, err
		}
		if err := p.canonicalText(*dst, at+"/"+name); err != nil {
			return id, err
		}
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

func (p *parser) revoked(v []byte) (Revoked, error) {
	var r Revoked
	m, err := p.object(v, "/revoked", revokedMembers...)
	if err != nil {
		return r, err
	}
	if x, ok := m["$comment"]; ok {
		if err := p.comment(x, "/revoked/$comment"); err != nil {
			return r, err
		}
	}
	list := func(name string, check func(string) bool, want string) ([]string, error) {
		x, ok := m[name]
		if !ok {
			return nil, nil
		}
		at := "/revoked/" + name
		items, err := p.array(x, at, MaxRevoked)
		if err != nil {
			return nil, err
		}
		var out []string
		for i, it := range items {
			ati := at + "/" + strconv.Itoa(i)
			s, err := p.str(it, ati)
			if err != nil {
				return nil, err
			}
			if err := p.canonicalText(s, ati); err != nil {
				return nil, err
			}
			if !check(s) {
				return nil, p.fail(ati, "%s: want %s", strconv.Quote(s), want)
			}
			// Revocations compare under Unicode simple case folding (Revoked.Check):
			// two entries equal so are one.
			if j := slices.IndexFunc(out, func(o string) bool { return strings.EqualFold(o, s) }); j >= 0 {
				return nil, p.failAs(ati, ErrDuplicate, "%s repeats %s/%d", strconv.Quote(s), at, j)
			}
			out = append(out, s)
		}
		return out, nil
	}
	const dg = "sha256: and 64 lowercase hex digits"
	if r.Bundles, err = list("bundles", digest.ValidDigest, dg); err != nil {
		return r, err
	}
	if r.Definitions, err = list("definitions", digest.ValidDigest, dg); err != nil {
		return r, err
	}
	if r.Identities, err = list("identities", canonicalRevokedIdentity, "a key ID written sha256: and 64 lowercase hex digits (as keygen and verify print it), or a certificate identity"); err != nil {
		return r, err
	}
	return r, nil
}

// canonicalText refuses an identity string that can never equal what a
// verification reports: one with white space at either end, or a control
// character anywhere (docs/POLICY.md "Canonical forms").
func (p *parser) canonicalText(s, at string) error {
	if s == "" {
		return nil
	}
	if strings.TrimSpace(s) != s {
		return p.failAs(at, ErrNotCanonical, "%s has white space at its start or end, which no signer's identity has", strconv.Quote(s))
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return p.failAs(at, ErrNotCanonical, "%s contains a control character", strconv.Quote(s))
	}
	// Certificates and tokens carry names composed (NFC); identities and
	// revocations compare without normalizing, so another form (a letter
	// and a combining accent, a Kelvin sign for K) would never equal the
	// signer's, and a revocation so written would revoke nothing.
	if !norm.NFC.IsNormalString(s) {
		return p.failAs(at, ErrNotCanonical, "%s is not in Unicode normal form C (NFC), the form certificates and tokens carry: write %s", strconv.Quote(s), strconv.Quote(norm.NFC.String(s)))
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
		return p.failAs(at, ErrNotCanonical, "%s: write the scheme and host in lower case, as the issuer's tokens name it (issuers are compared exactly)", strconv.Quote(s))
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

// pointerToken escapes a JSON Pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// truncate shows at most 40 bytes of a value in an error, quoted.
func truncate(v []byte) string {
	s := string(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}
