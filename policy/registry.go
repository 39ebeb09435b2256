package policy

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// GitHubActionsIssuer is the OIDC issuer of GitHub Actions' tokens, the
// default issuer of a repository signer.
const GitHubActionsIssuer = "https://token.actions.githubusercontent.com"

// ErrNoRepositorySigner: a server whose policy derives its signer from the
// entry's repository has no GitHub repository URL to derive it from.
var ErrNoRepositorySigner = errors.New("no signer can be derived from the entry's repository")

// RepositorySigner says that the signer of a registry entry is derived
// from the entry itself (docs/POLICY.md, "Registry entries"): a GitHub
// repository.url https://github.com/OWNER/REPO means a workflow of that
// repository (the certificate's SAN
// https://github.com/OWNER/REPO/.github/workflows/FILE@REF), and the
// certificate's claims (Fulcio's extensions) must name that repository,
// the workflow, a ref the policy accepts and, when the policy names them,
// a trigger it accepts. Which repositories may sign for an entry is the
// policy's, not the registry's: the owner is the namespace's
// (io.github.OWNER/) or the policy's Owner, and the repository is the
// entry's own name unless Repositories says otherwise.
type RepositorySigner struct {
	// Issuer is the OIDC issuer (GitHubActionsIssuer when not given).
	Issuer string
	// Workflow, when set, is the one workflow file name accepted
	// ("release.yml", in .github/workflows/); empty accepts any workflow
	// of the repository.
	Workflow string
	// Owner is the GitHub owner whose repositories may sign: required
	// outside the io.github. namespaces, where nothing else says whose an
	// entry is; inside io.github.OWNER/ it is OWNER, and may be given only
	// as OWNER.
	Owner string
	// Repositories are the names of the owner's repositories that may
	// sign (compared ignoring ASCII case, as GitHub does); ["*"] is any.
	// nil: only the repository named as the entry (its name after "/":
	// io.github.acme/notes is acme/notes's).
	Repositories []string
	// Refs are the git refs a signing run may have run on: exact
	// ("refs/tags/v1.0.0") or a prefix ending in "*" ("refs/tags/*", one
	// or more characters). nil: DefaultRefs(), tags only.
	Refs []string
	// Triggers are the events that may have started the signing run
	// ("push", "release", "workflow_dispatch"); nil: any.
	Triggers []string
}

// DefaultRefs returns the refs a repository signer accepts when the
// policy names none: release tags, never a branch (refs/heads/…) or a
// pull request (refs/pull/N/merge), which anyone who can push a branch or
// open a pull request may run a workflow on.
func DefaultRefs() []string { return []string{"refs/tags/*"} }

// Hand-written character checks, not regexps: nothing is compiled at start
// or per entry.

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

// charsIn reports whether s is 1 to max bytes, each alphanumeric or in
// extra.
func charsIn(s, extra string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && !strings.ContainsRune(extra, rune(s[i])) {
			return false
		}
	}
	return true
}

// githubPart: an owner or repository name as GitHub spells them.
func githubPart(s string) bool { return charsIn(s, "_.-", 100) }

// workflowFile: a workflow file name, FILE.yml or FILE.yaml.
func workflowFile(s string) bool {
	return charsIn(s, "_.-", 200) && (strings.HasSuffix(s, ".yml") && len(s) > 4 || strings.HasSuffix(s, ".yaml") && len(s) > 5)
}

// ValidRegistryName reports whether name is a registry server name
// ("io.github.acme/notes") or a namespace pattern ("io.github.acme/*"),
// which a policy may list beside the local server names: the official
// registry's rule, each part starting with a letter or digit, no "..".
func ValidRegistryName(name string) bool {
	ns, n, ok := strings.Cut(name, "/")
	if !ok || len(name) > 200 || strings.Contains(name, "..") {
		return false
	}
	if !charsIn(ns, ".-", 200) || !alnum(ns[0]) {
		return false
	}
	return n == "*" || charsIn(n, "._-", 200) && alnum(n[0])
}

// count is the identities rs adds to a server: one, or none for nil.
func (rs *RepositorySigner) count() int {
	if rs == nil {
		return 0
	}
	return 1
}

// issuerURL: an OIDC issuer's http(s) URL, its host in lower case.
func issuerURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && u.Host != "" && strings.ToLower(u.Host) == u.Host
}

// stringSet reads v at at: a non-empty array of at most 32 strings, each
// valid says is so (want describes them), no two equal (ignoring ASCII
// case with fold: names GitHub compares so).
func (p *parser) stringSet(v []byte, at string, fold bool, valid func(string) bool, want string) ([]string, error) {
	items, err := p.array(v, at, MaxIdentities)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, p.fail(at, "is empty: leave the member out for its default")
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		ati := at + "/" + strconv.Itoa(i)
		s, err := p.str(it, ati)
		if err != nil {
			return nil, err
		}
		if !valid(s) {
			return nil, p.fail(ati, "%s: want %s", textsafe.RawQuote(s), want)
		}
		if j := slices.IndexFunc(out, func(o string) bool { return o == s || fold && strings.EqualFold(o, s) }); j >= 0 {
			return nil, p.failAs(ati, ErrDuplicate, "%s repeats %s/%d", textsafe.RawQuote(s), at, j)
		}
		out = append(out, s)
	}
	return out, nil
}

// githubOwner: a GitHub user or organization name (letters, digits and
// '-', not at the start).
func githubOwner(s string) bool { return charsIn(s, "-", 39) && alnum(s[0]) }

// refPattern: "refs/" and printable ASCII without white space, a "*"
// only at the end (a prefix pattern).
func refPattern(s string) bool {
	if !strings.HasPrefix(s, "refs/") || len(s) > 255 || len(s) == len("refs/") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f || s[i] == '*' && i != len(s)-1 {
			return false
		}
	}
	return true
}

// refMatches reports whether ref matches one of patterns (refPattern).
func refMatches(patterns []string, ref string) bool {
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			if len(ref) > len(prefix) && strings.HasPrefix(ref, prefix) {
				return true
			}
		} else if ref == pat {
			return true
		}
	}
	return false
}

// namespaceOwner is the GitHub owner a registry namespace names
// (io.github.OWNER), "" for another namespace.
func namespaceOwner(name string) string {
	ns, _, _ := strings.Cut(name, "/")
	if o, ok := strings.CutPrefix(ns, GitHubNamespacePrefix); ok {
		return o
	}
	return ""
}

// GitHubNamespacePrefix starts the official registry's GitHub namespaces:
// io.github.OWNER is granted to the GitHub user or organization OWNER.
const GitHubNamespacePrefix = "io.github."

// checkOwner checks rs's owner against the registry name it governs (a
// policy server name or an entry name): outside io.github. the policy
// must name the owner; inside io.github.OWNER/ an owner it names must be
// OWNER.
func (rs *RepositorySigner) checkOwner(name string) error {
	switch ns := namespaceOwner(name); {
	case ns == "" && rs.Owner == "":
		return fmt.Errorf("%w: %s is not in an io.github. namespace, so nothing says whose repository may sign for it: name the GitHub owner in repositorySigner's \"owner\"", ErrNoRepositorySigner, textsafe.RawQuote(cut(name)))
	case ns != "" && rs.Owner != "" && !strings.EqualFold(ns, rs.Owner):
		return fmt.Errorf("%w: repositorySigner's owner %s is not %s, the owner the namespace of %s is granted to", ErrNoRepositorySigner, textsafe.RawQuote(rs.Owner), textsafe.RawQuote(ns), textsafe.RawQuote(cut(name)))
	}
	return nil
}

// MatchRegistry returns the name of the policy server that governs the
// registry entry name: the server of that exact name, else the namespace
// pattern "NS/*" whose NS is the entry's namespace (the part before its
// "/"). ok is false when none does: such an entry is not verified.
func (f *File) MatchRegistry(name string) (server string, ok bool) {
	if !ValidRegistryName(name) || strings.HasSuffix(name, "/*") {
		return "", false
	}
	if _, ok := f.Servers[name]; ok {
		return name, true
	}
	ns, _, _ := strings.Cut(name, "/")
	if _, ok := f.Servers[ns+"/*"]; ok {
		return ns + "/*", true
	}
	return "", false
}

// ResolveRegistry resolves the policy server that governs registry entry
// name (MatchRegistry) as Resolve resolves a local server, with no lock: a
// registry entry is verified, not run. It returns ErrNoServer when no
// policy name matches.
func (f *File) ResolveRegistry(name string) (*Resolved, error) {
	server, ok := f.MatchRegistry(name)
	if !ok {
		return nil, fmt.Errorf("%w: no policy server is %s or its namespace pattern", ErrNoServer, textsafe.RawQuote(name))
	}
	r, err := f.resolveRegistryServer(server)
	if err != nil {
		return nil, err
	}
	r.entry = name
	return r, nil
}

// resolveRegistryServer resolves the policy server named server, a
// registry name or namespace pattern, as Resolve resolves a local one,
// with no lock.
func (f *File) resolveRegistryServer(server string) (*Resolved, error) {
	// Resolve keys a server by a local name; the entry goes in under one.
	const local = "registry-entry"
	g := *f
	g.Servers = map[string]Server{local: f.Servers[server]}
	r, err := g.Resolve(local, ResolveOptions{StateDir: "/"})
	if err != nil {
		return nil, fmt.Errorf("policy server %s: %w", textsafe.RawQuote(server), err)
	}
	r.Name, r.Lock, r.DefaultLock = server, "", false
	return r, nil
}

// ForRepository returns r with the identity its RepositorySigner derives
// from an entry's repository URL appended (r itself when it has none). A
// URL that is not https://github.com/OWNER/REPO (an optional ".git" or
// "/" ending aside) is ErrNoRepositorySigner, and so is a repository the
// policy does not let sign for the entry r was resolved for
// (ResolveRegistry): an owner other than the namespace's or the policy's
// Owner, a repository other than the entry's own name or one of
// Repositories. The derived identity's SourceRepository is what the
// certificate's source repository must equal (RepositoryURI); the rest of
// the certificate's claims (ref, trigger, workflow) are checked when a
// bundle is decided on (CheckClaims).
func (r *Resolved) ForRepository(repoURL string) (*Resolved, error) {
	rs := r.RepositorySigner
	if rs == nil {
		return r, nil
	}
	owner, repo, err := GitHubRepository(repoURL)
	if err != nil {
		return nil, err
	}
	if err := rs.Allows(r.entry, owner, repo); err != nil {
		return nil, err
	}
	wf := `[^/@]+`
	if rs.Workflow != "" {
		wf = regexp.QuoteMeta(rs.Workflow)
	}
	id := Identity{Method: verify.MethodSigstore, Identity: verify.Identity{
		Issuer:                   rs.Issuer,
		SANRegexp:                `https://github\.com/` + regexp.QuoteMeta(owner+"/"+repo) + `/\.github/workflows/` + wf + `@.+`,
		GitHubWorkflowRepository: owner + "/" + repo,
	}, at: "repository.url", repo: &derivedRepo{rs: rs, owner: owner, repo: repo}}
	out := *r
	out.Identities = append(append([]Identity(nil), r.Identities...), id)
	return &out, nil
}

// Allows reports (nil) whether the repository OWNER/REPO may sign for
// the registry entry name under rs: the owner is the one the entry's
// io.github. namespace is granted to, or outside those rs.Owner (which
// must then be given); the repository is the entry's own name (after its
// "/") unless rs.Repositories names others or "*". Names compare
// ignoring ASCII case, as GitHub does. An empty name (rs not resolved
// for a registry entry) is refused. A refusal is ErrNoRepositorySigner.
func (rs *RepositorySigner) Allows(name, owner, repo string) error {
	if name == "" {
		return fmt.Errorf("%w: no registry entry to derive a signer for", ErrNoRepositorySigner)
	}
	if err := rs.checkOwner(name); err != nil {
		return err
	}
	want := rs.Owner
	if ns := namespaceOwner(name); ns != "" {
		want = ns
	}
	if !strings.EqualFold(owner, want) {
		return fmt.Errorf("%w: the entry %s may be signed only from repositories of %s, its repository.url is of %s", ErrNoRepositorySigner, textsafe.RawQuote(cut(name)), textsafe.RawQuote(want), textsafe.RawQuote(owner))
	}
	switch _, entry, _ := strings.Cut(name, "/"); {
	case rs.Repositories == nil && !strings.EqualFold(repo, entry):
		return fmt.Errorf("%w: the entry %s may be signed only from the repository %s (named as the entry; list others in repositorySigner's \"repositories\"), its repository.url is %s", ErrNoRepositorySigner, textsafe.RawQuote(cut(name)), textsafe.RawQuote(want+"/"+entry), textsafe.RawQuote(owner+"/"+repo))
	case rs.Repositories != nil && !slices.Contains(rs.Repositories, "*") && !slices.ContainsFunc(rs.Repositories, func(s string) bool { return strings.EqualFold(s, repo) }):
		return fmt.Errorf("%w: the repository %s is not among repositorySigner's \"repositories\"", ErrNoRepositorySigner, textsafe.RawQuote(owner+"/"+repo))
	}
	return nil
}

// derivedRepo is what a derived identity's certificate claims must say:
// the rule and the repository it was derived for.
type derivedRepo struct {
	rs          *RepositorySigner
	owner, repo string
}

// CheckClaims checks the Fulcio claims of a certificate that satisfied
// the identity rs derives for the repository OWNER/REPO, as cosign's
// --certificate-github-workflow-* flags do (docs/POLICY.md, "Registry
// entries"): the source repository (1.3.6.1.4.1.57264.1.12, else the
// deprecated .1.5) is the repository; the build configuration
// (.1.18, the workflow that started the run), when present, is a workflow
// of that repository, rs.Workflow when given; the source ref (.1.14, else
// .1.6) matches rs.Refs (DefaultRefs when nil); and, when rs.Triggers is
// given, the trigger (.1.20, else .1.2) is one of them. A claim and its
// deprecated form that disagree, or a claim the rule needs that is
// missing, are refused. A refusal wraps verify.ErrIdentityMismatch.
func (rs *RepositorySigner) CheckClaims(owner, repo string, c *certificate.Summary) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: repository signer: %s", verify.ErrIdentityMismatch, fmt.Sprintf(format, args...))
	}
	if c == nil {
		return bad("the signature has no certificate")
	}
	x := c.Extensions
	claim := func(name, v, deprecated string) (string, error) {
		if v != "" && deprecated != "" && v != deprecated {
			return "", bad("the certificate's %s %s and its deprecated form %s disagree", name, textsafe.RawQuote(v), textsafe.RawQuote(deprecated))
		}
		if v == "" {
			v = deprecated
		}
		return v, nil
	}
	wantURI := "https://github.com/" + owner + "/" + repo
	depRepo := ""
	if x.GithubWorkflowRepository != "" {
		depRepo = "https://github.com/" + x.GithubWorkflowRepository
	}
	got, err := claim("source repository", x.SourceRepositoryURI, depRepo)
	if err != nil {
		return err
	}
	if got != wantURI {
		return bad("the certificate's source repository is %s, the entry's is %s", textsafe.RawQuote(got), textsafe.RawQuote(wantURI))
	}
	if x.BuildConfigURI != "" {
		file, ok := strings.CutPrefix(x.BuildConfigURI, wantURI+"/.github/workflows/")
		file, _, at := strings.Cut(file, "@")
		if !ok || !at || !workflowFile(file) || rs.Workflow != "" && file != rs.Workflow {
			want := "a workflow of " + wantURI
			if rs.Workflow != "" {
				want = wantURI + "/.github/workflows/" + rs.Workflow
			}
			return bad("the certificate's build configuration (the workflow that started the run) is %s, want %s", textsafe.RawQuote(x.BuildConfigURI), textsafe.RawQuote(want))
		}
	}
	ref, err := claim("source ref", x.SourceRepositoryRef, x.GithubWorkflowRef)
	if err != nil {
		return err
	}
	refs := rs.Refs
	if refs == nil {
		refs = DefaultRefs()
	}
	if !refMatches(refs, ref) {
		return bad("the run's ref %s is not one repositorySigner accepts (%s)", textsafe.RawQuote(ref), strings.Join(refs, ", "))
	}
	if rs.Triggers != nil {
		trig, err := claim("trigger", x.BuildTrigger, x.GithubWorkflowTrigger)
		if err != nil {
			return err
		}
		if !slices.Contains(rs.Triggers, trig) {
			return bad("the run's trigger %s is not one repositorySigner accepts (%s)", textsafe.RawQuote(trig), strings.Join(rs.Triggers, ", "))
		}
	}
	return nil
}

// RepositoryURI is the certificate source repository (Fulcio extension
// 1.3.6.1.4.1.57264.1.12) a repository signer requires: the GitHub URL
// https://github.com/OWNER/REPO.
func RepositoryURI(repoURL string) (string, error) {
	owner, repo, err := GitHubRepository(repoURL)
	if err != nil {
		return "", err
	}
	return "https://github.com/" + owner + "/" + repo, nil
}

// GitHubRepository splits https://github.com/OWNER/REPO (optionally ending
// in ".git" or "/") into its owner and repository.
func GitHubRepository(repoURL string) (owner, repo string, err error) {
	u, perr := url.Parse(repoURL)
	bad := func() (string, string, error) {
		return "", "", fmt.Errorf("%w: repository.url %s is not https://github.com/OWNER/REPO", ErrNoRepositorySigner, textsafe.RawQuote(cut(repoURL)))
	}
	if repoURL == "" {
		return "", "", fmt.Errorf("%w: the entry has no repository.url", ErrNoRepositorySigner)
	}
	if perr != nil || u.Scheme != "https" || u.Host != "github.com" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad()
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) != 2 || !githubPart(parts[0]) || !githubPart(parts[1]) {
		return bad()
	}
	return parts[0], parts[1], nil
}

func cut(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
