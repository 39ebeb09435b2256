package pin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

func TestCheckRollForward(t *testing.T) {
	keyA := Approval{Method: evidence.MethodKey, Identity: "sha256:aa"}
	t1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(24 * time.Hour)
	held := func(name, version string, a Approval) *Lock {
		return &Lock{Server: digest.ServerInfo{Name: name, Version: version}, Approval: a}
	}
	next := func(name, version string, a Approval, at time.Time) *Verified {
		return &Verified{Approval: a, Server: digest.ServerInfo{Name: name, Version: version}, SignedAt: at}
	}
	tests := []struct {
		name     string
		held     *Lock
		heldTime time.Time
		next     *Verified
		want     string // the rule, "" allowed
	}{
		{"newer version, newer signature", held("notes", "2.0.0", keyA), t1, next("notes", "2.1.0", keyA, t2), ""},
		{"newer version, no times", held("notes", "2.0.0", keyA), time.Time{}, next("notes", "3.0.0", keyA, time.Time{}), ""},
		{"same version and time: the same release signed again", held("notes", "2.0.0", keyA), t1, next("notes", "2.0.0", keyA, t1), ""},
		{"with and without a leading v", held("notes", "v2.0.0", keyA), t1, next("notes", "2.0.1", keyA, t2), ""},
		{"versions that are not semver: time alone", held("notes", "2026.05", keyA), t1, next("notes", "2025.01", keyA, t2), ""},
		{"one version not semver: time alone", held("notes", "latest", keyA), t1, next("notes", "1.0.0", keyA, t2), ""},
		{"held time unknown, next older version", held("notes", "2.0.0", keyA), time.Time{}, next("notes", "1.0.0", keyA, t1), RuleRollForwardLowerVersion},
		{"another key", held("notes", "2.0.0", keyA), t1, next("notes", "3.0.0", Approval{Method: evidence.MethodKey, Identity: "sha256:bb"}, t2), RuleRollForwardOtherSigner},
		{"another method", held("notes", "2.0.0", keyA), t1, next("notes", "3.0.0", Approval{Method: evidence.MethodCertificate, Identity: "sha256:aa"}, t2), RuleRollForwardOtherSigner},
		{"another issuer", held("notes", "2.0.0", Approval{Method: evidence.MethodSigstore, Identity: "a@example.com", Issuer: "https://one"}), t1,
			next("notes", "3.0.0", Approval{Method: evidence.MethodSigstore, Identity: "a@example.com", Issuer: "https://two"}, t2), RuleRollForwardOtherSigner},
		{"another server", held("notes", "2.0.0", keyA), t1, next("twofaced", "3.0.0", keyA, t2), RuleRollForwardOtherServer},
		{"server name differs in case only", held("notes", "2.0.0", keyA), t1, next("Notes", "3.0.0", keyA, t2), RuleRollForwardOtherServer},
		{"older signature", held("notes", "2.0.0", keyA), t2, next("notes", "1.0.0", keyA, t1), RuleRollForwardOlderSignature},
		{"older signature of a higher version", held("notes", "2.0.0", keyA), t2, next("notes", "3.0.0", keyA, t1), RuleRollForwardOlderSignature},
		{"lower version, no times", held("notes", "2.0.0", keyA), time.Time{}, next("notes", "1.0.0", keyA, time.Time{}), RuleRollForwardLowerVersion},
		{"lower version signed later (a backport)", held("notes", "2.0.0", keyA), t1, next("notes", "1.9.9", keyA, t2), RuleRollForwardLowerVersion},
		{"prerelease of the held version", held("notes", "2.0.0", keyA), time.Time{}, next("notes", "v2.0.0-rc.1", keyA, time.Time{}), RuleRollForwardLowerVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRollForward(tc.held, tc.heldTime, tc.next)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *ApprovalError
			if !errors.As(err, &ae) || ae.Rule != tc.want {
				t.Fatalf("err %v, want rule %s", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want+": ") || ae.Reason == "" {
				t.Errorf("message %q", err.Error())
			}
		})
	}
}

// TestRollForwardReasonQuotesServerTextRaw: a reason names the server's
// text raw (textsafe.RawQuote), for the edge that prints it to escape once
// (the proxy's report, the CLI's error line): escaped here, it would show
// \\u{202E} there.
func TestRollForwardReasonQuotesServerTextRaw(t *testing.T) {
	held := &Lock{Server: digest.ServerInfo{Name: "notes", Version: "2.0.0"}, Approval: Approval{Method: evidence.MethodKey, Identity: "sha256:aa"}}
	err := CheckRollForward(held, time.Time{}, &Verified{Approval: held.Approval, Server: digest.ServerInfo{Name: "notes\u202e\x1b[2J\\", Version: "1"}})
	if err == nil || !strings.HasSuffix(err.Error(), `the bundle signs the server "notes`+"\u202e\x1b"+`[2J\"`) {
		t.Fatalf("err %q: the server's name is not quoted raw", err)
	}
	if got, want := textsafe.Escape(err.Error()), `the bundle signs the server "notes\u{202E}\u{1B}[2J\\"`; !strings.HasSuffix(got, want) {
		t.Errorf("printed: %s, want it to end %s", got, want)
	}
}

func TestSemVer(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3": "v1.2.3", "v1.2.3": "v1.2.3", "1.2.3-rc.1+build": "v1.2.3-rc.1+build",
		"1.2": "v1.2", // golang.org/x/mod/semver's shorthand
		"":    "", "vv1.2.3": "", "V1.2.3": "", "1.2.3.4": "", "latest": "", "01.2.3": "",
	} {
		if got := SemVer(in); got != want {
			t.Errorf("SemVer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEvidenceTime(t *testing.T) {
	for _, tc := range []struct {
		tlog *evidence.Tlog
		want time.Time
	}{
		{nil, time.Time{}},
		{&evidence.Tlog{LogIndex: 1, LogID: "0a"}, time.Time{}},
		{&evidence.Tlog{LogIndex: 1, LogID: "0a", IntegratedTime: new(time.Unix(0, 0).UTC())}, time.Time{}}, // no time, not 1970
		{&evidence.Tlog{LogIndex: 1, LogID: "0a", IntegratedTime: new(time.Unix(1767225600, 0).UTC())}, time.Unix(1767225600, 0).UTC()},
	} {
		l := &Lock{Approval: Approval{Method: evidence.MethodKey, Tlog: tc.tlog}}
		if got := l.EvidenceTime(); !got.Equal(tc.want) {
			t.Errorf("%+v: %v, want %v", tc.tlog, got, tc.want)
		}
	}
}
