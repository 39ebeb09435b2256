package attest

import (
	"errors"
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
