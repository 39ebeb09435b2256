package policy

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// member is one member of a policy object: its name as the format spells
// it, and how it is read into the object's Go value.
type member[T any] struct {
	name string
	// missing, when set, makes the member required: the refusal of an
	// object without it says "missing member NAME (missing)".
	missing string
	// read reads the member's value v, at the JSON Pointer at, into dst.
	read func(p *parser, v []byte, at string, dst *T) error
}

// table is every member of one kind of policy object, in the format's
// order (the order docs/POLICY.md lists them in). It is the one list: the
// names the object allows, how each is read, which are required, and the
// order they are checked in all come from it, so that no name can be
// allowed and then ignored (for a security policy that is failing open),
// and of several bad members the one reported is the first in the table,
// whatever their order in the file. policy/schema.json lists the same
// members (TestSchemaMembers).
type table[T any] []member[T]

// names are the table's member names, in order.
func (t table[T]) names() []string {
	out := make([]string, len(t))
	for i, m := range t {
		out[i] = m.name
	}
	return out
}

// object reads the object v at at into dst: a member the table does not
// name is refused (ErrUnknownMember), then the members are read in the
// table's order.
func (t table[T]) object(p *parser, v []byte, at string, dst *T) error {
	m, err := p.object(v, at, t.names()...)
	if err != nil {
		return err
	}
	return t.read(p, m, at, dst)
}

// read reads the members m of the object at at into dst, in the table's
// order, refusing a required one that is missing.
func (t table[T]) read(p *parser, m map[string][]byte, at string, dst *T) error {
	for _, mb := range t {
		v, ok := m[mb.name]
		if !ok {
			if mb.missing != "" {
				return p.fail(at, "missing member %s (%s)", textsafe.RawQuote(mb.name), mb.missing)
			}
			continue
		}
		if err := mb.read(p, v, at+"/"+digest.PointerToken(mb.name), dst); err != nil {
			return err
		}
	}
	return nil
}

// commentMember is "$comment": a string or an array of strings, ignored.
func commentMember[T any]() member[T] {
	return member[T]{name: "$comment", read: func(p *parser, v []byte, at string, _ *T) error { return p.comment(v, at) }}
}

// pathMember reads a path (relative to the policy's directory) into the
// string field of dst that field returns.
func pathMember[T any](name string, field func(*T) *string) member[T] {
	return member[T]{name: name, read: func(p *parser, v []byte, at string, dst *T) (err error) {
		*field(dst), err = p.path(v, at)
		return err
	}}
}

// enumMember reads one of allowed into the optional field of dst.
func enumMember[T any, E ~string](name string, field func(*T) **E, allowed ...string) member[T] {
	return member[T]{name: name, read: func(p *parser, v []byte, at string, dst *T) error {
		s, err := p.enum(v, at, allowed...)
		if err != nil {
			return err
		}
		e := E(s)
		*field(dst) = &e
		return nil
	}}
}

// topTable: the policy file.
func topTable() table[File] {
	return table[File]{
		{name: "kind", missing: "want " + textsafe.RawQuote(Kind), read: func(p *parser, v []byte, at string, _ *File) error {
			s, err := p.str(v, at)
			if err == nil && s != Kind {
				err = p.fail(at, "is %s, want %s", textsafe.RawQuote(s), textsafe.RawQuote(Kind))
			}
			return err
		}},
		{name: "policyVersion", missing: "want " + strconv.Itoa(Version), read: func(p *parser, v []byte, at string, _ *File) error {
			if string(v) != strconv.Itoa(Version) {
				return p.fail(at, "is %s, want %d", truncate(v), Version)
			}
			return nil
		}},
		commentMember[File](),
		{name: "trust", read: func(p *parser, v []byte, at string, f *File) error {
			return trustTable().object(p, v, at, &f.Trust)
		}},
		{name: "defaults", read: func(p *parser, v []byte, at string, f *File) (err error) {
			f.Defaults, err = p.server(v, at)
			return err
		}},
		{name: "servers", read: func(p *parser, v []byte, at string, f *File) error { return p.servers(v, at, f) }},
		{name: "revoked", read: func(p *parser, v []byte, at string, f *File) error {
			return revokedTable().object(p, v, at, &f.Revoked)
		}},
	}
}

// trustTable: "trust".
func trustTable() table[Trust] {
	return table[Trust]{
		commentMember[Trust](),
		pathMember("trustedRoot", func(t *Trust) *string { return &t.TrustedRoot }),
		{name: "tuf", read: func(p *parser, v []byte, at string, t *Trust) error {
			if t.TrustedRoot != "" {
				return p.fail(at, "give trustedRoot or tuf, not both")
			}
			return tufTable().object(p, v, at, t)
		}},
		pathMember("caRoots", func(t *Trust) *string { return &t.CARoots }),
		{name: "caIntermediates", read: func(p *parser, v []byte, at string, t *Trust) (err error) {
			if t.CARoots == "" {
				return p.fail(at, "intermediates without caRoots")
			}
			t.CAIntermediates, err = p.path(v, at)
			return err
		}},
	}
}

// tufTable: "trust"/"tuf".
func tufTable() table[Trust] {
	return table[Trust]{
		{name: "mirror", read: func(p *parser, v []byte, at string, t *Trust) (err error) {
			if t.TUFMirror, err = p.str(v, at); err != nil {
				return err
			}
			if !validBundleURL(t.TUFMirror) {
				return p.fail(at, "%s is not an https URL", textsafe.RawQuote(t.TUFMirror))
			}
			return nil
		}},
		pathMember("cache", func(t *Trust) *string { return &t.TUFCache }),
	}
}

// serverTable: a server entry, and "defaults".
func serverTable() table[Server] {
	return table[Server]{
		commentMember[Server](),
		{name: "identities", read: func(p *parser, v []byte, at string, s *Server) error { return p.identities(v, at, s) }},
		{name: "threshold", read: func(p *parser, v []byte, at string, s *Server) error {
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 1 || n > MaxIdentities || string(v) != strconv.Itoa(n) {
				return p.fail(at, "want an integer from 1 to %d, not %s", MaxIdentities, truncate(v))
			}
			s.Threshold = &n
			return nil
		}},
		{name: "require", read: func(p *parser, v []byte, at string, s *Server) error { return p.require(v, at, s) }},
		{name: "maxBundleAge", read: func(p *parser, v []byte, at string, s *Server) error {
			str, err := p.str(v, at)
			if err != nil {
				return err
			}
			d, err := time.ParseDuration(str)
			if err != nil || d <= 0 {
				return p.fail(at, "%s: want a positive Go duration such as \"720h\"", textsafe.RawQuote(str))
			}
			s.MaxBundleAge = &d
			return nil
		}},
		{name: "bundle", read: func(p *parser, v []byte, at string, s *Server) error { return p.bundle(v, at, s) }},
		{name: "package", read: func(p *parser, v []byte, at string, s *Server) error {
			str, err := p.str(v, at)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(str, "pkg:") || !strings.Contains(str[4:], "/") {
				return p.fail(at, "%s: want a purl (pkg:TYPE/NAMESPACE/NAME@VERSION)", textsafe.RawQuote(str))
			}
			s.Package = &str
			return nil
		}},
		{name: "lock", read: func(p *parser, v []byte, at string, s *Server) error {
			if at == "/defaults/lock" {
				return p.fail(at, "a lock is per server (the default is keyed by the server's name)")
			}
			path, err := p.path(v, at)
			s.Lock = &path
			return err
		}},
		enumMember("mode", func(s *Server) **Mode { return &s.Mode }, "block", "warn", "audit"),
		enumMember("unsigned", func(s *Server) **Unsigned { return &s.Unsigned }, "refuse", "tofu"),
		enumMember("rollForward", func(s *Server) **RollForward { return &s.RollForward }, "signed", "manual"),
		enumMember("resources", func(s *Server) **Resources { return &s.Resources }, "pass", "pin", "hide"),
		{name: "audit", read: func(p *parser, v []byte, at string, s *Server) error {
			path, err := p.path(v, at)
			s.Audit = &path
			return err
		}},
		{name: "clientCapabilities", read: func(p *parser, v []byte, at string, s *Server) error {
			caps, err := digest.CanonicalClientCapabilities(v)
			if err != nil {
				return p.fail(at, "%v", err)
			}
			b := []byte(caps)
			s.ClientCapabilities = &b
			return nil
		}},
		{name: "serverRequests", read: func(p *parser, v []byte, at string, s *Server) error {
			s.ServerRequests = &ServerRequests{}
			return serverRequestsTable().object(p, v, at, s.ServerRequests)
		}},
		{name: "repositorySigner", read: func(p *parser, v []byte, at string, s *Server) error {
			s.RepositorySigner = &RepositorySigner{Issuer: GitHubActionsIssuer}
			return repositorySignerTable().object(p, v, at, s.RepositorySigner)
		}},
	}
}

// identityTables: an identity's members, by its method ("method" first:
// it says which table the others are read by).
func identityTables() map[verify.Method]table[Identity] {
	return map[verify.Method]table[Identity]{
		verify.MethodSigstore: {
			methodMember,
			textMember("issuer", func(id *Identity) *string { return &id.Identity.Issuer }),
			textMember("issuerRegexp", func(id *Identity) *string { return &id.Identity.IssuerRegexp }),
			textMember("subject", func(id *Identity) *string { return &id.Identity.SAN }),
			textMember("subjectRegexp", func(id *Identity) *string { return &id.Identity.SANRegexp }),
			textMember("sourceRepository", func(id *Identity) *string { return &id.Identity.GitHubWorkflowRepository }),
			textMember("sourceRef", func(id *Identity) *string { return &id.Identity.GitHubWorkflowRef }),
			textMember("workflowSha", func(id *Identity) *string { return &id.Identity.GitHubWorkflowSHA }),
			textMember("workflowTrigger", func(id *Identity) *string { return &id.Identity.GitHubWorkflowTrigger }),
			textMember("workflowName", func(id *Identity) *string { return &id.Identity.GitHubWorkflowName }),
		},
		verify.MethodKey: {
			methodMember,
			{name: "key", missing: "the PEM public key file", read: func(p *parser, v []byte, at string, id *Identity) (err error) {
				id.Key, err = p.path(v, at)
				return err
			}},
		},
		verify.MethodCertificate: {
			methodMember,
			textMember("subject", func(id *Identity) *string { return &id.Identity.Subject }),
			textMember("san", func(id *Identity) *string { return &id.Identity.SAN }),
			textMember("sanRegexp", func(id *Identity) *string { return &id.Identity.SANRegexp }),
			textMember("email", func(id *Identity) *string { return &id.Identity.Email }),
			textMember("uri", func(id *Identity) *string { return &id.Identity.URI }),
			textMember("dns", func(id *Identity) *string { return &id.Identity.DNS }),
			textMember("issuer", func(id *Identity) *string { return &id.Identity.Issuer }),
		},
	}
}

// identityMethods are the methods in the format's order.
var identityMethods = []verify.Method{verify.MethodSigstore, verify.MethodKey, verify.MethodCertificate}

// methodMember is an identity's "method", read before the others (it
// picks their table): read again, it checks nothing more.
var methodMember = member[Identity]{name: "method", read: func(*parser, []byte, string, *Identity) error { return nil }}

// textMember reads an identity string in canonical form (canonicalText).
func textMember(name string, field func(*Identity) *string) member[Identity] {
	return member[Identity]{name: name, read: func(p *parser, v []byte, at string, id *Identity) error {
		s, err := p.str(v, at)
		if err != nil {
			return err
		}
		*field(id) = s
		return p.canonicalText(s, at)
	}}
}

// revokedTable: "revoked".
func revokedTable() table[Revoked] {
	return table[Revoked]{
		commentMember[Revoked](),
		revokedList("bundles", func(r *Revoked) *[]string { return &r.Bundles }, digest.ValidDigest, revokedDigest),
		revokedList("definitions", func(r *Revoked) *[]string { return &r.Definitions }, digest.ValidDigest, revokedDigest),
		revokedList("identities", func(r *Revoked) *[]string { return &r.Identities }, canonicalRevokedIdentity,
			"a key ID written sha256: and 64 lowercase hex digits (as keygen and verify print it), or a certificate identity"),
	}
}

const revokedDigest = "sha256: and 64 lowercase hex digits"

// repositorySignerTable: "repositorySigner".
func repositorySignerTable() table[RepositorySigner] {
	return table[RepositorySigner]{
		{name: "issuer", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			if rs.Issuer, err = p.str(v, at); err != nil {
				return err
			}
			if !issuerURL(rs.Issuer) {
				return p.fail(at, "%s: want the issuer's URL, scheme and host in lower case", textsafe.RawQuote(rs.Issuer))
			}
			return nil
		}},
		{name: "workflow", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			if rs.Workflow, err = p.str(v, at); err != nil {
				return err
			}
			if !workflowFile(rs.Workflow) {
				return p.fail(at, "%s: want a workflow file name (release.yml)", textsafe.RawQuote(rs.Workflow))
			}
			return nil
		}},
		{name: "owner", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			if rs.Owner, err = p.str(v, at); err != nil {
				return err
			}
			if !githubOwner(rs.Owner) {
				return p.fail(at, "%s: want a GitHub user or organization name (letters, digits and '-')", textsafe.RawQuote(rs.Owner))
			}
			return nil
		}},
		{name: "repositories", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			rs.Repositories, err = p.stringSet(v, at, true, func(s string) bool { return s == "*" || githubPart(s) }, `a repository name of the owner (notes), or "*" for any`)
			if err == nil && len(rs.Repositories) > 1 && slices.Contains(rs.Repositories, "*") {
				err = p.fail(at, `"*" (any repository) with other names: give one or the other`)
			}
			return err
		}},
		{name: "refs", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			rs.Refs, err = p.stringSet(v, at, false, refPattern, `a git ref (refs/tags/v1.0.0) or a prefix ending in "*" (refs/tags/*)`)
			return err
		}},
		{name: "triggers", read: func(p *parser, v []byte, at string, rs *RepositorySigner) (err error) {
			rs.Triggers, err = p.stringSet(v, at, false, func(s string) bool { return charsIn(s, "_", 64) }, "a GitHub Actions event name (push, release, workflow_dispatch)")
			return err
		}},
	}
}

// serverRequestsTable: "serverRequests", one member per kind
// (serverRequestKinds, the one list of them).
func serverRequestsTable() table[ServerRequests] {
	t := make(table[ServerRequests], len(serverRequestKinds))
	for i, k := range serverRequestKinds {
		t[i] = member[ServerRequests]{name: k.name, read: func(p *parser, v []byte, at string, sr *ServerRequests) error {
			r, err := p.enum(v, at, string(RuleRelay), string(RuleDeny))
			*k.rule(sr) = ServerRequestRule(r)
			return err
		}}
	}
	return t
}
