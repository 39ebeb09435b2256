package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/verify"
)

// TestVerifyTextCertificateSource: the text report shows what the
// certificate vouches for and whether the predicate agrees, escaped.
func TestVerifyTextCertificateSource(t *testing.T) {
	commit := strings.Repeat("a", 40)
	cert := &attest.Source{Repository: "https://github.com/acme/notes", Commit: commit, Ref: "refs/tags/v1\x1b[2J"}
	for _, tc := range []struct {
		name    string
		claimed *attest.Source
		want    []string
	}{
		{"agrees", &attest.Source{Repository: cert.Repository, Commit: commit}, []string{
			`certificate source.repository  "https://github.com/acme/notes" (the predicate's claim agrees)`,
			`certificate source.commit      "` + commit + `" (the predicate's claim agrees)`,
			`certificate source.ref         "refs/tags/v1\u{1B}[2J" (the predicate does not claim it)`,
		}},
		{"no claims", nil, []string{`certificate source.commit      "` + commit + `" (the predicate does not claim it)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &verify.Result{Method: verify.MethodSigstore, CertificateSource: cert,
				Statement: &attest.Statement{Predicate: attest.Predicate{Source: tc.claimed}}}
			var b bytes.Buffer
			if err := writeVerifyText(&b, res, nil); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), "\x1b") {
				t.Error("an escape character was printed")
			}
		})
	}
}

func TestSignTextCertificateSource(t *testing.T) {
	vouched := &attest.Source{Repository: "https://github.com/acme/notes", Commit: strings.Repeat("a", 40)}
	var b bytes.Buffer
	writeSignSource(&b, &attest.Source{Commit: vouched.Commit}, vouched)
	want := "  certificate source.repository\t\"https://github.com/acme/notes\" (the statement does not claim it)\n" +
		"  certificate source.commit\t\"" + vouched.Commit + "\" (the statement's claim agrees)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeSignSource(&b, nil, nil)
	if b.Len() != 0 {
		t.Errorf("no certificate source, got %q", b.String())
	}
}
