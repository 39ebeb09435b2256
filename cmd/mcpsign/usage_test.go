package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestUsageMessages: what a new user mistypes is refused (exit 2) with a
// message that says what to do, and never what did not happen.
func TestUsageMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		want   []string
		unwant []string
	}{
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Run 'mcpsign --help' for usage."}, nil},
		{"missing argument", []string{"trustroot", "show"}, []string{"accepts 1 arg(s), received 0", "Run 'mcpsign trustroot show --help' for usage."}, nil},
		{"flag error, one hint", []string{"digest", "--nope"}, []string{"unknown flag: --nope"}, nil},
		{"verify method typo before a server", []string{"verify", "kye", "--bundle", "b.json", "--", "server"}, []string{`unknown verify method "kye": did you mean "key"?`, "put it after --"}, []string{"identity"}},
		{"verify method typo alone", []string{"verify", "sigstor", "--bundle", "b.json"}, []string{`did you mean "sigstore"?`}, nil},
		{"sign method typo", []string{"sign", "kye"}, []string{`unknown sign method "kye": did you mean "key"?`}, nil},
		{"keygen without a password", []string{"keygen", "-o", dir + "/new"}, []string{"the new key needs a password", "--password-env"}, []string{"encrypted and no password", "private key is encrypted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.unwant {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, stderr)
				}
			}
			if n := strings.Count(stderr, "--help' for usage."); n > 1 {
				t.Errorf("the usage hint is given %d times:\n%s", n, stderr)
			}
		})
	}
}

// TestHelpTexts: each command's help describes that command, and the root
// help points to the docs by a URL a 'go install' user can open.
func TestHelpTexts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args         []string
		want, unwant string
	}{
		{[]string{"pin", "--help"}, "verified against the server before the lock is written", "rolls the lock forward"},
		{[]string{"proxy", "--help"}, "a signed update rolls the lock forward", ""},
		{[]string{"--help"}, docsURL, "docs/ describes"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 0 || !strings.Contains(stdout, tc.want) || (tc.unwant != "" && strings.Contains(stdout, tc.unwant)) {
			t.Errorf("%v: exit %d, want %q and not %q in\n%s%s", tc.args, code, tc.want, tc.unwant, stdout, stderr)
		}
	}
}

// TestDocsCitedExist: every docs page a help text cites is in the
// repository, and the docs cite nothing outside it (no design notes, no
// shared directory beside the clone).
func TestDocsCitedExist(t *testing.T) {
	t.Parallel()
	var texts []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts = append(texts, c.Long, c.Example, c.Short)
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
	cited := regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)`)
	for _, text := range texts {
		for _, m := range cited.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join("..", "..", "docs", m[1])); err != nil {
				t.Errorf("a help text cites %s, which is not in the repository", m[0])
			}
		}
	}
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	pages = append(pages, filepath.Join("..", "..", "README.md"))
	outside := regexp.MustCompile(`DESIGN\.md|DESIGN's|\.\./shared/`)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := outside.Find(b); m != nil {
			t.Errorf("%s cites %q, which a clone does not have", filepath.Base(p), m)
		}
	}
	if len(pages) < 10 {
		t.Errorf("found only %d docs pages", len(pages))
	}
}

// TestHelpExamplesParse: every 'mcpsign ...' command line in an Example of
// the help names a command and flags that exist, with values where they
// take one: an example that fails as written fails here first.
func TestHelpExamplesParse(t *testing.T) {
	t.Parallel()
	var examples []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		joined := strings.ReplaceAll(c.Example, "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), " #")
			if strings.HasPrefix(line, "mcpsign ") && !strings.ContainsAny(line, "|<>$`") {
				examples = append(examples, line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
	if len(examples) < 20 {
		t.Fatalf("found only %d examples", len(examples))
	}
	for _, ex := range examples {
		words := shellWords(ex)[1:]
		root := newRootCmd(&app{})
		c, rest, err := root.Find(words)
		if err != nil {
			t.Errorf("%s: %v", ex, err)
			continue
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v", ex, err)
			continue
		}
		// A keyless verification names the signer: identity and issuer.
		set := func(names ...string) bool {
			for _, n := range names {
				if f := c.Flags().Lookup(n); f != nil && f.Changed {
					return true
				}
			}
			return false
		}
		keyless := set("bundle", "bundle-from-server") && !set("key", "ca-roots", "policy", "tofu") &&
			c.Name() != "bundle" && c.Name() != "key" && c.Name() != "certificate" && c.Flags().Lookup("certificate-oidc-issuer") != nil
		if keyless && (!set("certificate-identity", "certificate-identity-regexp") || !set("certificate-oidc-issuer", "certificate-oidc-issuer-regexp")) {
			t.Errorf("%s: a keyless verification without --certificate-identity and --certificate-oidc-issuer fails as written", ex)
		}
	}
}

// shellWords splits a command line as a shell does for the examples: on
// spaces, with '…' and "…" quoting (no escapes).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestEveryCommandHasExamples: every command a person runs shows how in its
// --help (audit and hosts once had none).
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil &&
			c.Parent().Name() != "completion" && !strings.Contains(c.Example, "mcpsign ") {
			t.Errorf("%s: --help has no example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
}
