package attest

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestParsePackage(t *testing.T) {
	t.Parallel()
	p, err := ParsePackage("pkg:npm/%40acme/notes@1.2.0", "sha512:"+strings.Repeat("ab", 64))
	if err != nil || p.PURL != "pkg:npm/%40acme/notes@1.2.0" || p.Digest["sha512"] != strings.Repeat("ab", 64) {
		t.Fatalf("%+v %v", p, err)
	}
	if p, err := ParsePackage("pkg:pypi/notes@1", ""); err != nil || p.Digest != nil {
		t.Errorf("no digest: %+v %v", p, err)
	}
	for _, tc := range []struct{ purl, digest, part string }{
		{"npm/notes@1", "", "purl"},
		{"pkg:npm/no tes@1", "", "purl"},
		{"pkg:npm/" + strings.Repeat("a", 2048), "", "purl"},
		{"pkg:npm/notes@1", "SHA256:" + strings.Repeat("a", 64), "digest"},
		{"pkg:npm/notes@1", "sha256-" + strings.Repeat("a", 64), "digest"},
		{"pkg:npm/notes@1", "sha256:abc", "digest"},
	} {
		var ie *InputError
		if _, err := ParsePackage(tc.purl, tc.digest); !errors.As(err, &ie) || ie.Part != tc.part {
			t.Errorf("%q %q: %v, want an InputError of %s", tc.purl, tc.digest, err, tc.part)
		}
	}
}

func TestSourceWithDefaults(t *testing.T) {
	t.Parallel()
	gh := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/notes", "GITHUB_SHA": "abc", "GITHUB_REF": "refs/tags/v1"}
	src, err := SourceWithDefaults(Source{Ref: "refs/heads/main"}, func(k string) string { return gh[k] })
	if err != nil || *src != (Source{Repository: "https://github.com/acme/notes", Commit: "abc", Ref: "refs/heads/main"}) {
		t.Errorf("%+v %v", src, err)
	}
	none := func(string) string { return "" }
	if src, err := SourceWithDefaults(Source{}, none); src != nil || err != nil {
		t.Errorf("no claim: %+v %v", src, err)
	}
	var ie *InputError
	if _, err := SourceWithDefaults(Source{Commit: "a\nb"}, none); !errors.As(err, &ie) || ie.Part != "source.commit" {
		t.Errorf("a control character: %v", err)
	}
}

// FuzzParsePackage checks ParsePackage's hand-written checks against the
// regular expressions they replace (no regexp is compiled at start-up).
func FuzzParsePackage(f *testing.F) {
	for _, s := range [][2]string{
		{"pkg:npm/%40acme/notes@1.2.0", "sha512:" + strings.Repeat("ab", 64)},
		{"pkg:1npm/x@1", "sha256:" + strings.Repeat("0", 16)},
		{"pkg:n.p+m-2/x", "a-1:" + strings.Repeat("f", 256)},
		{"pkg:/x", "-a:" + strings.Repeat("f", 16)},
		{"pkg:npm", "sha256:" + strings.Repeat("F", 64)},
		{"pkg:ñpm/x", "é:" + strings.Repeat("a", 15)},
	} {
		f.Add(s[0], s[1])
	}
	purlRe := regexp.MustCompile(`^pkg:[a-zA-Z.+-][a-zA-Z0-9.+-]*/`)
	algRe := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	hexRe := regexp.MustCompile(`^[0-9a-f]{16,256}$`)
	f.Fuzz(func(t *testing.T, purl, digest string) {
		if got, want := isPURLPrefix(purl), purlRe.MatchString(purl); got != want {
			t.Errorf("isPURLPrefix(%q) = %v, the regexp says %v", purl, got, want)
		}
		alg, hexd, _ := strings.Cut(digest, ":")
		if got, want := isDigestAlg(alg), algRe.MatchString(alg); got != want {
			t.Errorf("isDigestAlg(%q) = %v, the regexp says %v", alg, got, want)
		}
		if got, want := isDigestHex(hexd), hexRe.MatchString(hexd); got != want {
			t.Errorf("isDigestHex(%q) = %v, the regexp says %v", hexd, got, want)
		}
		p, err := ParsePackage(purl, digest)
		if err == nil && p.PURL != purl {
			t.Errorf("ParsePackage(%q) = %q", purl, p.PURL)
		}
	})
}
