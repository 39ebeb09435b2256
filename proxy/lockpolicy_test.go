package proxy

import (
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
)

// TestDescribeSigner: a signer is named by its method and identity, and
// its issuer only when there is one (a key has none); nobody signed a tofu
// approval.
func TestDescribeSigner(t *testing.T) {
	for _, tc := range []struct {
		a              pin.Approval
		signer, approv string
	}{
		{pin.Approval{Method: evidence.MethodSigstore, Identity: "https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1", Issuer: "https://token.actions.githubusercontent.com"},
			`sigstore "https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1" (issuer "https://token.actions.githubusercontent.com")`, ""},
		{pin.Approval{Method: evidence.MethodKey, Identity: "sha256:0a"}, `key "sha256:0a"`, ""},
		{pin.Approval{Method: pin.MethodTOFU}, `tofu ""`, "tofu (trusted on first use: nobody signed it)"},
	} {
		if got := describeSigner(tc.a); got != tc.signer {
			t.Errorf("describeSigner = %s, want %s", got, tc.signer)
		}
		want := tc.approv
		if want == "" {
			want = tc.signer
		}
		if got := describeApproval(tc.a); got != want {
			t.Errorf("describeApproval = %s, want %s", got, want)
		}
	}
}
