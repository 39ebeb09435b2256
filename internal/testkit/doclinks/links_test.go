// Package doclinks tests that the documentation's links resolve: every
// relative link and #anchor in README.md, SECURITY.md and docs/*.md names a
// file of the repository and, for a Markdown file, a heading in it, as
// GitHub renders them.
package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from this package's directory.
const root = "../../.."

// docs are the pages whose links are checked, relative to root.
func docs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "SECURITY.md"}
	for _, p := range pages {
		r, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(r))
	}
	if len(out) < 10 {
		t.Fatalf("found only %d pages", len(out))
	}
	return out
}

var (
	fence     = regexp.MustCompile("^\\s*(```|~~~)")
	heading   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLnk = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refLnk    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	codeSpan  = regexp.MustCompile("`+[^`]*`+")
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
)

// lines returns the lines of text outside fenced code blocks.
func lines(text string) []string {
	var out []string
	in := ""
	for _, l := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(l); m != nil {
			switch {
			case in == "":
				in = m[1]
			case in == m[1]:
				in = ""
			}
			out = append(out, "")
			continue
		}
		if in != "" {
			out = append(out, "")
			continue
		}
		out = append(out, l)
	}
	return out
}

// slug is GitHub's anchor of a heading's text: its rendered text in lower
// case, every character that is not a letter, a digit, a space, '-' or '_'
// removed, spaces made hyphens.
func slug(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	h = strings.NewReplacer("`", "", "**", "", "~~", "").Replace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown page: one per heading (a
// repeated one numbered -1, -2, … as GitHub does) and each <a id>.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines(text) {
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// links returns the targets of the page's links with their line numbers.
func links(text string) (targets []string, at []int) {
	for i, l := range lines(text) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLnk.FindAllStringSubmatch(l, -1) {
			targets, at = append(targets, m[2]), append(at, i+1)
		}
		if m := refLnk.FindStringSubmatch(l); m != nil {
			targets, at = append(targets, m[1]), append(at, i+1)
		}
	}
	return targets, at
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Definition Digest v1 (normative)":            "definition-digest-v1-normative",
		"`mcpsign verify`: what it checks":            "mcpsign-verify-what-it-checks",
		"Exit codes, 0/1/2":                           "exit-codes-012",
		"The lock's `lockDigest`":                     "the-locks-lockdigest",
		"Trust: [TUF](https://theupdateframework.io)": "trust-tuf",
		"snake_case and  two spaces":                  "snake_case-and--two-spaces",
		"Ünïcode — dash":                              "ünïcode--dash",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# not a heading\n```\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("anchors lack %q: %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code block is a heading")
	}
}

func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := cache[page]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return nil, err
		}
		cache[page] = anchors(string(b))
		return cache[page], nil
	}
	checked := 0
	for _, page := range docs(t) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		targets, at := links(string(b))
		for i, target := range targets {
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: %s leaves the repository", page, at[i], target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s:%d: %s: no such file %s", page, at[i], target, dest)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: %s: an anchor in a file that is not Markdown", page, at[i], target)
				continue
			}
			a, err := anchorsOf(dest)
			if err != nil {
				t.Errorf("%s:%d: %s: %v", page, at[i], target, err)
				continue
			}
			if !a[frag] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", page, at[i], target, dest, frag)
			}
		}
	}
	t.Logf("%d relative links checked", checked)
	if checked < 20 {
		t.Errorf("only %d relative links checked: the link reader misses some", checked)
	}
}
