package sign

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
)

func TestSignTextCertificateSource(t *testing.T) {
	vouched := &attest.Source{Repository: "https://github.com/acme/notes", Commit: strings.Repeat("a", 40)}
	var b bytes.Buffer
	WriteSourceText(&b, &attest.Source{Commit: vouched.Commit}, vouched)
	want := "  certificate source.repository\t\"https://github.com/acme/notes\" (the statement does not claim it)\n" +
		"  certificate source.commit\t\"" + vouched.Commit + "\" (the statement's claim agrees)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	WriteSourceText(&b, nil, nil)
	if b.Len() != 0 {
		t.Errorf("no certificate source, got %q", b.String())
	}
}
