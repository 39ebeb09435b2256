package policy

import (
	"errors"
	"slices"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/verify"
)

// TestClaimsHold: in Decide, a derived repository signer that verify
// matched (its SAN and issuer) counts only when the certificate's claims
// satisfy its rule; a listed identity the same certificate matched still
// counts, and the refused one says why.
func TestClaimsHold(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"repositorySigner":{},
"identities":[{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com","subjectRegexp":"https://github\\.com/acme/.*"}]}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.ResolveRegistry("io.github.acme/notes")
	if err != nil {
		t.Fatal(err)
	}
	if r, err = r.ForRepository("https://github.com/acme/notes"); err != nil {
		t.Fatal(err)
	}
	summary := func(ref string) *verify.Result {
		c := &certificate.Summary{}
		c.Extensions.SourceRepositoryURI = "https://github.com/acme/notes"
		c.Extensions.SourceRepositoryRef = ref
		return &verify.Result{Certificate: c}
	}
	for _, c := range []struct {
		ref  string
		want []int
	}{
		{"refs/tags/v1", []int{0, 1}},
		{"refs/heads/feature-x", []int{0}},
		{"refs/pull/7/merge", []int{0}},
	} {
		reasons := make([][]error, 2)
		got, err := claimsHold(r.Identities, []int{0, 1}, summary(c.ref), reasons)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v count, want %v", c.ref, got, c.want)
		}
		if refused := len(c.want) < 2; refused != (err != nil) || refused != (len(reasons[1]) == 1) || len(reasons[0]) != 0 {
			t.Errorf("%s: error %v, reasons %v", c.ref, err, reasons)
		}
		if err != nil && (!errors.Is(err, verify.ErrIdentityMismatch) || !errors.Is(reasons[1][0], verify.ErrIdentityMismatch)) {
			t.Errorf("%s: %v", c.ref, err)
		}
		if step, _ := verify.FailedStep(err); err != nil && step != verify.StepIdentity {
			t.Errorf("%s: step %q", c.ref, step)
		}
	}
}
