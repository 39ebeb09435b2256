package main

import (
	"errors"
	"fmt"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/oauth"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// TestWithFlagHint: each library error that a flag fixes gets that flag,
// once, wherever it is in the chain; a failed verification keeps its step.
func TestWithFlagHint(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "" = unchanged
	}{
		{"existing file", fmt.Errorf("out.json: %w", atomicfile.ErrExists), "(pass --force to replace it)"},
		{"no timestamp", &verify.StepError{Step: verify.StepTime, Err: verify.ErrNoTimestamp}, "--require-tlog requires a log entry, --allow-current-time allows the current time"},
		{"timestamp without its root", &verify.StepError{Step: verify.StepTime, Err: verify.ErrTimestampNoRoot}, "pass it with --trusted-root"},
		{"signing without a root", fmt.Errorf("signing: %w", sign.ErrNoTrustedRoot), "(pass --trusted-root)"},
		{"no token", fmt.Errorf("%w: give a token", sign.ErrNoToken), "--identity-token takes a token or a file"},
		{"wrong audience", sign.ErrTokenAudience, "--oidc-client-id sets the client ID"},
		{"chain order", &sign.CertificateError{Reason: "r", Cause: sign.ErrChainOrder}, "--certificate-chain is the issuing intermediates in order"},
		{"source claim", fmt.Errorf("%w: source.ref", sign.ErrClaimMismatch), "(the claims come from --source-repository, --source-commit and --source-ref, in GitHub Actions by default from GITHUB_REPOSITORY, GITHUB_SHA and GITHUB_REF)"},
		{"no root CA", &sign.CertificateError{Reason: "r", Cause: sign.ErrNoRootCA}, "--ca-roots"},
		{"no TUF root", fmt.Errorf("%w for https://tuf.example", trustroot.ErrNoTUFRoot), "--tuf-root FILE"},
		{"Rekor", &sign.ServiceError{Service: sign.ServiceRekor, URL: "http://127.0.0.1:1", Err: errors.New("refused")}, "--rekor-url and --rekor-version"},
		{"TSA", &sign.ServiceError{Service: sign.ServiceTSA, URL: "http://127.0.0.1:1", Err: errors.New("refused")}, "--tsa-url"},
		{"Fulcio: no flag", &sign.ServiceError{Service: sign.ServiceFulcio, URL: "http://127.0.0.1:1", Err: errors.New("refused")}, ""},
		{"lock not written", &auditevent.UnwrittenLockError{Log: "a.jsonl", Lock: "sha256:ab", Err: errors.New("disk full")}, "(audit verify --lock finds it)"},
		{"OAuth cache through a link", fmt.Errorf("%w: x", oauth.ErrCacheDir), "--oauth-cache-dir takes a directory whose path has no symbolic link"},
		{"another error", errors.New("boom"), ""},
		{"another certificate refusal", &sign.CertificateError{Reason: "expired"}, ""},
		{"already said", fmt.Errorf("%w (pass --force to replace it)", atomicfile.ErrExists), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := withFlagHint(tc.err)
			if tc.want == "" {
				if got != tc.err {
					t.Fatalf("changed to %v", got)
				}
				return
			}
			msg := got.Error()
			if strings.Count(msg, tc.want) != 1 || !strings.HasPrefix(msg, tc.err.Error()) {
				t.Fatalf("%q: want %q once, after the error's own text", msg, tc.want)
			}
			if se, ok := tc.err.(*verify.StepError); !ok {
				if !errors.Is(got, tc.err) {
					t.Errorf("the hinted error does not wrap %v", tc.err)
				}
			} else {
				hs, ok := got.(*verify.StepError)
				if !ok || hs.Step != se.Step || !errors.Is(hs.Err, se.Err) || !strings.Contains(hs.Err.Error(), tc.want) {
					t.Errorf("a step failure became %#v", got)
				}
			}
			if again := withFlagHint(got); again.Error() != got.Error() {
				t.Errorf("hinted twice: %q", again)
			}
		})
	}
	if withFlagHint(nil) != nil {
		t.Error("nil hinted")
	}
}
