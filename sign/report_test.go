package sign

import (
	"bytes"
	"strings"
	"testing"
	"time"

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

func TestTimingsString(t *testing.T) {
	for _, tc := range []struct {
		t    Timings
		want string
	}{
		{Timings{}, "Fulcio 0s, Rekor 0s, timestamp authority 0s, verify 0s, sign total 0s"},
		{Timings{Fulcio: 1234567 * time.Nanosecond, Rekor: 2 * time.Second, TSA: 49 * time.Microsecond, Verify: 150 * time.Microsecond, Total: 3*time.Second + 1},
			"Fulcio 1.2ms, Rekor 2s, timestamp authority 0s, verify 200µs, sign total 3s"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}
