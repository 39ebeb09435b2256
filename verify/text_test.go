package verify

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
)

// TestWriteResultTextVerdict: the verdict line names the failed step, the
// hint follows only a bundle-step failure and only when the caller gives
// one, and the error's text is escaped.
func TestWriteResultTextVerdict(t *testing.T) {
	bundleErr := &StepError{Step: StepBundle, Err: errors.New("not a Sigstore bundle\x1b[2J")}
	for _, tc := range []struct {
		name string
		res  *Result
		err  error
		hint string
		want string
	}{
		{"bundle failure with hint", nil, bundleErr, "pass a bundle",
			"FAILED at step bundle: not a Sigstore bundle\\u{1B}[2J\n(pass a bundle)\n"},
		{"bundle failure without hint", nil, bundleErr, "",
			"FAILED at step bundle: not a Sigstore bundle\\u{1B}[2J\n"},
		{"another step: no hint", nil, &StepError{Step: StepIdentity, Err: errors.New("SAN \u202emoc.live")}, "pass a bundle",
			"FAILED at step identity: SAN \\u{202E}moc.live\n"},
		{"not a step error", nil, errors.New("boom"), "pass a bundle", "FAILED: boom\n"},
		{"a bundle without statement", &Result{Method: MethodKey, Identity: "sha256:ab"}, nil, "",
			"VERIFIED Sigstore bundle\n  method    key\n  identity  sha256:ab\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteResultText(&b, tc.res, tc.err, TextOptions{BundleHint: tc.hint}); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}

// TestWriteResultText: the whole report of a verified statement, byte for
// byte, every server string escaped.
func TestWriteResultText(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sig := "sha256:" + strings.Repeat("a", 64)
	obs := "sha256:" + strings.Repeat("b", 64)
	res := &Result{
		Verified: true, Method: MethodSigstore, Identity: "release@example.com", Issuer: "https://issuer.example",
		BundleDigest: "sha256:" + strings.Repeat("c", 64),
		Tlog:         &TlogEvidence{LogIndex: 42, LogID: "d00d", IntegratedTime: &at},
		SigningTime:  at, TimeSource: "Tlog",
		Statement: &attest.Statement{},
		Server:    digest.ServerInfo{Name: "notes\u202e", Version: "1.2.0"},
		Observed:  &digest.ServerInfo{Name: "notes\u202e", Version: "1.3.0"},
		Claims:    []Claim{{Name: "source.repository", Value: "https://github.com/acme/notes", Status: "verified", Evidence: "certificate"}},
		Definitions: []Row{
			{Kind: digest.KindTool, Key: "search", Status: StatusOK, Signed: sig, Observed: sig},
			{Kind: digest.KindTool, Key: "run\u200b", Status: StatusChanged, Signed: sig, Observed: obs, Diff: "--- signed\n+++ served\n"},
			{Kind: digest.KindTool, Status: StatusInvalid, Reason: "invalid UTF-8\x07", Index: 3},
		},
		Instructions: &InstructionsRow{Status: StatusOK, Signed: sig, Observed: sig},
	}
	var b bytes.Buffer
	if err := WriteResultText(&b, res, nil, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	counts := digest.CountText(func(k digest.Kind) int { return map[digest.Kind]int{digest.KindTool: 3}[k] })
	want := `VERIFIED notes\u{202E} 1.2.0: ` + counts + ` and the instructions match the signed statement
  method     sigstore
  identity   release@example.com
  issuer     https://issuer.example
  log entry  index 42 in log d00d, integrated 2026-05-01T12:00:00Z
  signed at  2026-05-01T12:00:00Z (transparency log)
  bundle     sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
  note       signed for server "notes\u{202E}" "1.2.0", the server now calls itself "notes\u{202E}" "1.3.0"
  claim      source.repository "https://github.com/acme/notes": verified (certificate)

STATUS   KIND          KEY          SIGNED                SERVED
OK       tool          search       sha256:aaaaaaaaaaaa…  sha256:aaaaaaaaaaaa…
CHANGED  tool          run\u{200B}  sha256:aaaaaaaaaaaa…  sha256:bbbbbbbbbbbb…
INVALID  tool          (#3)         -                     invalid: invalid UTF-8\u{7}
OK       instructions               sha256:aaaaaaaaaaaa…  sha256:aaaaaaaaaaaa…

tool "run\u{200B}" changed:
--- signed
+++ served
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestWriteResultTextCertificateSource: the text report shows what the
// certificate vouches for and whether the predicate agrees, escaped.
func TestWriteResultTextCertificateSource(t *testing.T) {
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
			res := &Result{Method: MethodSigstore, CertificateSource: cert,
				Statement: &attest.Statement{Predicate: attest.Predicate{Source: tc.claimed}}}
			var b bytes.Buffer
			if err := WriteResultText(&b, res, nil, TextOptions{}); err != nil {
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
