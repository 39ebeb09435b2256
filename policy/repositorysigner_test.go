package policy_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

// run is the GitHub Actions run a Fulcio-like certificate is issued for.
type run struct {
	repo, workflow, ref, trigger string
	// deprecatedRef, when set, is the deprecated ref extension (.1.6)
	// where it differs from the current one.
	deprecatedRef string
	// config, when set, is the workflow file that started the run
	// (the build configuration, .1.18) where it is not workflow's.
	config string
}

// fulcioSummary issues a certificate for r as Fulcio issues one to a
// GitHub Actions run (the SAN, the issuer and the build and source
// extensions, the deprecated ones too), with the test PKI, and returns
// sigstore-go's summary of it: what a verification reports.
func fulcioSummary(t *testing.T, ca *testpki.CA, r run) (*x509.Certificate, *certificate.Summary) {
	t.Helper()
	repoURI := "https://github.com/" + r.repo
	wf := repoURI + "/.github/workflows/" + r.workflow + "@" + r.ref
	san, err := url.Parse(wf)
	if err != nil {
		t.Fatal(err)
	}
	der := func(s string) []byte {
		b, err := asn1.MarshalWithParams(s, "utf8")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	oid := func(n int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, n} }
	depRef := r.ref
	if r.deprecatedRef != "" {
		depRef = r.deprecatedRef
	}
	cfg := wf
	if r.config != "" {
		cfg = repoURI + "/.github/workflows/" + r.config + "@" + r.ref
	}
	tmpl := testpki.CodeSigningLeaf(t, "", "", "")
	tmpl.Subject = pkix.Name{}
	tmpl.URIs = []*url.URL{san}
	tmpl.ExtraExtensions = []pkix.Extension{
		{Id: oid(2), Value: []byte(r.trigger)},
		{Id: oid(5), Value: []byte(r.repo)},
		{Id: oid(6), Value: []byte(depRef)},
		{Id: oid(8), Value: der(policy.GitHubActionsIssuer)},
		{Id: oid(9), Value: der(wf)},
		{Id: oid(12), Value: der(repoURI)},
		{Id: oid(14), Value: der(r.ref)},
		{Id: oid(18), Value: der(cfg)},
		{Id: oid(20), Value: der(r.trigger)},
	}
	c := ca.Issue(t, testpki.ECKey(t).Public(), tmpl)
	s, err := certificate.SummarizeCertificate(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, &s
}

// TestRepositorySignerPinned: what a repository signer accepts is the
// policy's (docs/POLICY.md, "Registry entries"), not the registry's:
// outside io.github. only an owner the policy names; inside
// io.github.acme/ only the entry's own repository unless the policy lists
// others; tags only unless the policy names other refs; the workflow and
// the trigger when the policy names them. Each row is one registry
// entry (its name and repository.url) and the run that signed it, decided
// as the registry verifier decides (ResolveRegistry, ForRepository, then
// the derived identity's claims).
func TestRepositorySignerPinned(t *testing.T) {
	t.Parallel()
	ca := testpki.New(t, testpki.Names{Organization: "Fulcio-like", Root: "root", Intermediate: "intermediate"})
	f, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{
 "io.github.acme/*":{"repositorySigner":{}},
 "io.github.acme/tools":{"repositorySigner":{"repositories":["toolbox","tools"]}},
 "io.github.wide/*":{"repositorySigner":{"repositories":["*"],"refs":["refs/tags/*","refs/heads/main"]}},
 "com.example/*":{"repositorySigner":{"owner":"example-org","workflow":"release.yml","refs":["refs/tags/v*"],"triggers":["push","release"]}}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	tag := "refs/tags/v1.0.0"
	for _, c := range []struct {
		name, entry, repoURL string
		run                  run
		want                 string // "" accepted; else a part of the refusal
	}{
		{"own repository, tag", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", tag, "push", "", ""}, ""},
		{"own repository, any workflow by default", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "build.yaml", tag, "release", "", ""}, ""},
		// acme's sandbox signs for notes: not unless the policy allows it.
		{"another repository of the owner", "io.github.acme/notes", "https://github.com/acme/sandbox", run{"acme/sandbox", "release.yml", tag, "push", "", ""}, `repository "acme/notes"`},
		{"a branch run", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", "refs/heads/feature-x", "push", "", ""}, `"refs/heads/feature-x" is not one`},
		{"a pull request run", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", "refs/pull/7/merge", "pull_request", "", ""}, `"refs/pull/7/merge" is not one`},
		{"main is not a tag", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", "refs/heads/main", "push", "", ""}, "is not one"},
		{"a prefix of the tags is no tag", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", "refs/tags/", "push", "", ""}, "is not one"},
		{"the deprecated ref disagrees", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", tag, "push", "refs/heads/feature-x", ""}, "disagree"},
		{"listed repository", "io.github.acme/tools", "https://github.com/acme/toolbox", run{"acme/toolbox", "release.yml", tag, "push", "", ""}, ""},
		{"unlisted repository", "io.github.acme/tools", "https://github.com/acme/notes", run{"acme/notes", "release.yml", tag, "push", "", ""}, "not among"},
		{"any repository when the policy says so", "io.github.wide/notes", "https://github.com/wide/sandbox", run{"wide/sandbox", "x.yml", "refs/heads/main", "push", "", ""}, ""},
		{"the namespace's owner still", "io.github.wide/notes", "https://github.com/evil/notes", run{"evil/notes", "x.yml", tag, "push", "", ""}, `only from repositories of "wide"`},
		{"the ref the policy adds, not others", "io.github.wide/notes", "https://github.com/wide/notes", run{"wide/notes", "x.yml", "refs/heads/dev", "push", "", ""}, "is not one"},
		{"outside io.github.: the policy's owner", "com.example/notes", "https://github.com/example-org/notes", run{"example-org/notes", "release.yml", "refs/tags/v2", "release", "", ""}, ""},
		// The workflow of whatever repository the registry names.
		{"outside io.github.: another owner", "com.example/notes", "https://github.com/evil/notes", run{"evil/notes", "release.yml", "refs/tags/v2", "release", "", ""}, `only from repositories of "example-org"`},
		{"outside io.github.: another workflow", "com.example/notes", "https://github.com/example-org/notes", run{"example-org/notes", "ci.yml", "refs/tags/v2", "release", "", ""}, "no e-mail or URI SAN matching"},
		// The workflow that signs is the pinned one, the run was started
		// by another (a workflow_call from ci.yml).
		{"started by another workflow", "com.example/notes", "https://github.com/example-org/notes", run{"example-org/notes", "release.yml", "refs/tags/v2", "push", "", "ci.yml"}, `build configuration (the workflow that started the run) is "https://github.com/example-org/notes/.github/workflows/ci.yml@refs/tags/v2", want "https://github.com/example-org/notes/.github/workflows/release.yml"`},
		{"started by a workflow of the repository", "io.github.acme/notes", "https://github.com/acme/notes", run{"acme/notes", "release.yml", tag, "push", "", "ci.yml"}, ""},
		{"a trigger the policy does not name", "com.example/notes", "https://github.com/example-org/notes", run{"example-org/notes", "release.yml", "refs/tags/v2", "workflow_dispatch", "", ""}, `"workflow_dispatch" is not one`},
		{"a tag outside the pattern", "com.example/notes", "https://github.com/example-org/notes", run{"example-org/notes", "release.yml", "refs/tags/nightly", "push", "", ""}, "is not one"},
	} {
		cert, sum := fulcioSummary(t, ca, c.run)
		err := decideRepository(t, f, c.entry, c.repoURL, cert, sum)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: accepted, want a refusal saying %q", c.name, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want != "" && !errors.Is(err, policy.ErrNoRepositorySigner) && !errors.Is(err, verify.ErrIdentityMismatch):
			t.Errorf("%s: %v is neither ErrNoRepositorySigner nor ErrIdentityMismatch", c.name, err)
		}
	}
}

// decideRepository decides, as the registry verifier does, whether the
// run that s summarizes may sign the registry entry named entry whose
// repository.url is repoURL: the identity derived for it must match the
// certificate (its SAN and issuer, as verify matches them) and its claims
// must be what the rule requires (as Decide checks them).
func decideRepository(t *testing.T, f *policy.File, entry, repoURL string, cert *x509.Certificate, s *certificate.Summary) error {
	t.Helper()
	r, err := f.ResolveRegistry(entry)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.ForRepository(repoURL)
	if err != nil {
		return err
	}
	id := d.Identities[len(d.Identities)-1]
	m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{id.Identity})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Match(cert); err != nil {
		return err
	}
	owner, repo, err := policy.GitHubRepository(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	return d.RepositorySigner.CheckClaims(owner, repo, s)
}

// TestRepositorySignerOwnerRule: a repository signer outside io.github.
// must name its owner, and inside io.github.OWNER/ may name only OWNER:
// refused when the policy is read, naming the member.
func TestRepositorySignerOwnerRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ server, rs, want string }{
		{"com.example/*", `{}`, `/servers/com.example~1*/repositorySigner: no signer can be derived`},
		{"com.example/notes", `{"workflow":"release.yml"}`, `name the GitHub owner`},
		{"io.github.acme/*", `{"owner":"evil"}`, `is not "acme"`},
		{"io.github.acme/*", `{"owner":"acme","repositories":["*","notes"]}`, `"*" (any repository) with other names`},
		{"io.github.acme/*", `{"refs":["refs/heads/*x"]}`, `/repositorySigner/refs/0`},
		{"io.github.acme/*", `{"refs":["heads/main"]}`, `/repositorySigner/refs/0`},
		{"io.github.acme/*", `{"refs":[]}`, `is empty`},
		{"io.github.acme/*", `{"triggers":["push","push"]}`, `duplicate`},
		{"io.github.acme/*", `{"triggers":["pull request"]}`, `/repositorySigner/triggers/0`},
		{"io.github.acme/*", `{"repositories":["a/b"]}`, `/repositorySigner/repositories/0`},
		{"io.github.acme/*", `{"owner":"-x"}`, `/repositorySigner/owner`},
	} {
		_, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"`+c.server+`":{"repositorySigner":`+c.rs+`}}}`), "/p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.server, c.rs, err, c.want)
		}
	}
	// In the defaults the owner rule waits for the entry.
	f, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"defaults":{"repositorySigner":{}},"servers":{"com.example/*":{},"io.github.acme/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.ResolveRegistry("com.example/notes")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ForRepository("https://github.com/example/notes"); !errors.Is(err, policy.ErrNoRepositorySigner) || !strings.Contains(err.Error(), "name the GitHub owner") {
		t.Fatalf("defaults outside io.github.: %v", err)
	}
	if r, err = f.ResolveRegistry("io.github.acme/notes"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ForRepository("https://github.com/acme/notes"); err != nil {
		t.Fatal(err)
	}
}

// TestCheckClaimsQuoteRaw: a claim of the certificate (which comes from the
// bundle) named in a refusal is quoted raw, not escaped where the error is
// built: textsafe.ShowError, where it is printed, escapes it once (a bidi
// override, a zero-width space, an escape sequence and a newline too), and
// a JSON report carries it as the certificate says it.
func TestCheckClaimsQuoteRaw(t *testing.T) {
	t.Parallel()
	h := "x\u202ey\u200bz\x1b[31m\\ \"q\"\nmcpsign: verified"
	repo := "https://github.com/acme/notes"
	for _, tc := range []struct {
		name  string
		rs    policy.RepositorySigner
		x     certificate.Extensions
		value string
	}{
		{"source repository", policy.RepositorySigner{}, certificate.Extensions{SourceRepositoryURI: repo + h}, repo + h},
		{"claims disagree", policy.RepositorySigner{}, certificate.Extensions{SourceRepositoryURI: repo, SourceRepositoryRef: "refs/heads/" + h, GithubWorkflowRef: "refs/heads/main"}, "refs/heads/" + h},
		{"build configuration", policy.RepositorySigner{}, certificate.Extensions{SourceRepositoryURI: repo, BuildConfigURI: repo + "/.github/workflows/" + h}, repo + "/.github/workflows/" + h},
		{"ref", policy.RepositorySigner{}, certificate.Extensions{SourceRepositoryURI: repo, SourceRepositoryRef: "refs/heads/" + h}, "refs/heads/" + h},
		{"trigger", policy.RepositorySigner{Triggers: []string{"push"}}, certificate.Extensions{SourceRepositoryURI: repo, SourceRepositoryRef: "refs/tags/v1", BuildTrigger: h}, h},
	} {
		err := tc.rs.CheckClaims("acme", "notes", &certificate.Summary{Extensions: tc.x})
		if !errors.Is(err, verify.ErrIdentityMismatch) {
			t.Errorf("%s: %v, want ErrIdentityMismatch", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), textsafe.RawQuote(tc.value)) {
			t.Errorf("%s: the error does not quote the claim raw: %q", tc.name, err.Error())
		}
		shown := textsafe.ShowError(err)
		if want := `"` + textsafe.Escape(tc.value) + `"`; !strings.Contains(shown, want) {
			t.Errorf("%s: shown as %s, want %s in it (escaped once)", tc.name, shown, want)
		}
		if strings.Contains(shown, `\\u{`) || strings.Contains(shown, "\n") {
			t.Errorf("%s: shown escaped twice or with a raw newline: %s", tc.name, shown)
		}
	}
}
