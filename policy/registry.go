package policy

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
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
// certificate's source repository must be that repository.
type RepositorySigner struct {
	// Issuer is the OIDC issuer (GitHubActionsIssuer when not given).
	Issuer string
	// Workflow, when set, is the one workflow file name accepted
	// ("release.yml"); empty accepts any workflow of the repository.
	Workflow string
}

var repositorySignerMembers = []string{"issuer", "workflow"}

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

func (p *parser) repositorySigner(v []byte, at string) (*RepositorySigner, error) {
	m, err := p.object(v, at, repositorySignerMembers...)
	if err != nil {
		return nil, err
	}
	rs := &RepositorySigner{Issuer: GitHubActionsIssuer}
	if x, ok := m["issuer"]; ok {
		if rs.Issuer, err = p.str(x, at+"/issuer"); err != nil {
			return nil, err
		}
		if u, err := url.Parse(rs.Issuer); err != nil || !(strings.HasPrefix(rs.Issuer, "https://") || strings.HasPrefix(rs.Issuer, "http://")) || u.Host == "" || strings.ToLower(u.Host) != u.Host {
			return nil, p.fail(at+"/issuer", "%s: want the issuer's URL, scheme and host in lower case", strconv.Quote(rs.Issuer))
		}
	}
	if x, ok := m["workflow"]; ok {
		if rs.Workflow, err = p.str(x, at+"/workflow"); err != nil {
			return nil, err
		}
		if !workflowFile(rs.Workflow) {
			return nil, p.fail(at+"/workflow", "%s: want a workflow file name (release.yml)", strconv.Quote(rs.Workflow))
		}
	}
	return rs, nil
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
		return nil, fmt.Errorf("%w: no policy server is %s or its namespace pattern", ErrNoServer, strconv.Quote(name))
	}
	// Resolve keys a server by a local name; the entry goes in under one.
	const local = "registry-entry"
	g := *f
	g.Servers = map[string]Server{local: f.Servers[server]}
	r, err := g.Resolve(local, ResolveOptions{StateDir: "/"})
	if err != nil {
		return nil, fmt.Errorf("policy server %s: %w", strconv.Quote(server), err)
	}
	r.Name, r.Lock, r.DefaultLock = server, "", false
	return r, nil
}

// ForRepository returns r with the identity its RepositorySigner derives
// from an entry's repository URL appended (r itself when it has none). A
// URL that is not https://github.com/OWNER/REPO (an optional ".git" or
// "/" ending aside) is ErrNoRepositorySigner. The derived identity's
// SourceRepository is what the certificate's source repository must
// equal (RepositoryURI).
func (r *Resolved) ForRepository(repoURL string) (*Resolved, error) {
	if r.RepositorySigner == nil {
		return r, nil
	}
	owner, repo, err := GitHubRepository(repoURL)
	if err != nil {
		return nil, err
	}
	wf := `[^/@]+`
	if r.RepositorySigner.Workflow != "" {
		wf = regexp.QuoteMeta(r.RepositorySigner.Workflow)
	}
	id := Identity{Method: verify.MethodSigstore, Identity: verify.Identity{
		Issuer:                   r.RepositorySigner.Issuer,
		SANRegexp:                `https://github\.com/` + regexp.QuoteMeta(owner+"/"+repo) + `/\.github/workflows/` + wf + `@.+`,
		GitHubWorkflowRepository: owner + "/" + repo,
	}, at: "repository.url"}
	out := *r
	out.Identities = append(append([]Identity(nil), r.Identities...), id)
	return &out, nil
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
		return "", "", fmt.Errorf("%w: repository.url %s is not https://github.com/OWNER/REPO", ErrNoRepositorySigner, digest.QuoteName(cut(repoURL)))
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
