package policy

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/verify"
)

func TestRegistryNames(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,
"defaults":{"maxBundleAge":"720h"},
"servers":{
 "io.github.acme/*":{"repositorySigner":{"workflow":"release.yml"}},
 "io.github.acme/special":{"identities":[{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com","subject":"https://github.com/acme/special/.github/workflows/r.yml@refs/heads/main"}]},
 "local":{"unsigned":"tofu"}}}`), "/etc/p.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"io.github.acme/notes":    "io.github.acme/*",
		"io.github.acme/special":  "io.github.acme/special",
		"io.github.acme.evil/x":   "",
		"io.github/acme":          "",
		"io.github.acme/*":        "",
		"local":                   "",
		"io.github.acme/a/b":      "",
		"io.github.acme/../local": "",
	} {
		got, ok := f.MatchRegistry(name)
		if got != want || ok != (want != "") {
			t.Errorf("%s: matched %q, want %q", name, got, want)
		}
	}
	r, err := f.ResolveRegistry("io.github.acme/notes")
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "io.github.acme/*" || r.Lock != "" || r.RepositorySigner == nil || r.RepositorySigner.Issuer != GitHubActionsIssuer || r.MaxBundleAge == 0 {
		t.Fatalf("%+v", r)
	}
	if _, err := f.ResolveRegistry("io.github.other/x"); !errors.Is(err, ErrNoServer) {
		t.Fatalf("unmatched: %v", err)
	}
	// A registry name is not a local server: --name refuses it.
	if _, err := f.Resolve("io.github.acme/special", ResolveOptions{StateDir: "/"}); !errors.Is(err, ErrBadName) {
		t.Fatalf("Resolve: %v", err)
	}

	d, err := r.ForRepository("https://github.com/acme/notes.git")
	if err != nil {
		t.Fatal(err)
	}
	id := d.Identities[len(d.Identities)-1]
	if id.Method != verify.MethodSigstore || id.Identity.GitHubWorkflowRepository != "acme/notes" || id.Identity.Issuer != GitHubActionsIssuer ||
		id.Identity.SANRegexp != `https://github\.com/acme/notes/\.github/workflows/release\.yml@.+` || d.Threshold != 1 {
		t.Fatalf("%+v", id)
	}
	if u, _ := RepositoryURI("https://github.com/acme/notes/"); u != "https://github.com/acme/notes" {
		t.Fatal(u)
	}
	for _, bad := range []string{"", "http://github.com/a/b", "https://gitlab.com/a/b", "https://github.com/a", "https://github.com/a/b/c",
		"https://user@github.com/a/b", "https://github.com/a/b?x=1", "https://github.com/a b/c", "https://github.com.evil/a/b"} {
		if _, err := r.ForRepository(bad); !errors.Is(err, ErrNoRepositorySigner) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestRepositorySignerRefusals(t *testing.T) {
	t.Parallel()
	base := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"repositorySigner":`
	for _, c := range []struct{ in, want string }{
		{`{"issuer":"HTTPS://x"}`, "/servers/io.github.acme~1*/repositorySigner/issuer"},
		{`{"issuer":"ftp://x"}`, "/repositorySigner/issuer"},
		{`{"workflow":"../x.yml"}`, "/repositorySigner/workflow"},
		{`{"workflow":"x"}`, "/repositorySigner/workflow"},
		{`{"wokflow":"x.yml"}`, "unknown member"},
		{`"yes"`, "/repositorySigner"},
	} {
		_, err := Parse([]byte(base+c.in+`}}}`), "/p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	for _, name := range []string{"../a/b", "a../b", "a/.b", "/b", "a/", "a/*b"} {
		if _, err := Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"`+name+`":{}}}`), "/p.json"); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}

// TestRegistryCharEdges: the hand-written character and length checks of
// registry names, repository signers and refs, at each edge of each
// range: the value on the edge is taken, the one past it refused.
func TestRegistryCharEdges(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		check string
		f     func(string) bool
		in    string
		want  bool
	}{
		{"alnum", func(s string) bool { return alnum(s[0]) }, "a", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "z", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "A", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "Z", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "0", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "9", true},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "`", false},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "{", false},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "@", false},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "[", false},
		{"alnum", func(s string) bool { return alnum(s[0]) }, "/", false},
		{"alnum", func(s string) bool { return alnum(s[0]) }, ":", false},
		{"githubPart", githubPart, long(100), true},
		{"githubPart", githubPart, long(101), false},
		{"githubOwner", githubOwner, long(39), true},
		{"githubOwner", githubOwner, long(40), false},
		{"workflowFile", workflowFile, "a.yml", true},
		{"workflowFile", workflowFile, ".yml", false},
		{"workflowFile", workflowFile, "a.yaml", true},
		{"workflowFile", workflowFile, ".yaml", false},
		{"ValidRegistryName", ValidRegistryName, long(198) + "/b", true},
		{"ValidRegistryName", ValidRegistryName, long(199) + "/b", false},
		{"refPattern", refPattern, "refs/" + long(250), true},
		{"refPattern", refPattern, "refs/" + long(251), false},
		{"refPattern", refPattern, "refs/", false},
		{"refPattern", refPattern, "refs/a*", true},
		{"refPattern", refPattern, "refs/*a", false},
		{"refPattern", refPattern, "refs/a b", false},
		{"refPattern", refPattern, "refs/a!b~", true},
		{"refPattern", refPattern, "refs/a\x7f", false},
		{"issuerURL", issuerURL, "https://token.actions.githubusercontent.com", true},
		{"issuerURL", issuerURL, "http://i.example", true},
		{"issuerURL", issuerURL, "https://I.example", false},
		{"issuerURL", issuerURL, "ftp://i.example", false},
		{"issuerURL", issuerURL, "https://i.example/%zz", false},
		{"refMatches", func(s string) bool { return refMatches([]string{"refs/tags/*"}, s) }, "refs/tags/v", true},
		{"refMatches", func(s string) bool { return refMatches([]string{"refs/tags/*"}, s) }, "refs/tags/", false},
	}
	for _, tt := range tests {
		if got := tt.f(tt.in); got != tt.want {
			t.Errorf("%s(%q) = %v, want %v", tt.check, tt.in, got, tt.want)
		}
	}
}

// TestRegistryThreshold: a repository signer counts as one identity
// beside those the server lists, for the threshold a registry entry must
// meet.
func TestRegistryThreshold(t *testing.T) {
	t.Parallel()
	id := func(s string) string {
		return `{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com","subject":"` + s + `@example.com"}`
	}
	for _, tt := range []struct {
		ids       []string
		threshold int
	}{
		{[]string{id("a")}, 2},
		{[]string{id("a"), id("b")}, 3},
		{[]string{id("a"), id("b")}, 2},
	} {
		f, err := Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"repositorySigner":{},"identities":[`+
			strings.Join(tt.ids, ",")+`],"threshold":`+strconv.Itoa(tt.threshold)+`}}}`), "/etc/p.json")
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.ResolveRegistry("io.github.acme/notes")
		if err != nil || r.Threshold != tt.threshold {
			t.Errorf("%d identities and a repository signer, threshold %d: %+v, %v", len(tt.ids), tt.threshold, r, err)
		}
	}
}
