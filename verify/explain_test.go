package verify

import (
	"context"
	"crypto"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
)

// TestVerifierExplain explains a failed signature with the verifier's own
// key: the bundle's key hint against it; nothing for a bundle signed by
// that key or a failure of another step.
func TestVerifierExplain(t *testing.T) {
	t.Parallel()
	snap := exampleSnapshot()
	payload := statementOf(t, snap, attest.Options{})
	pb, signer := keySigned(t, payload, attest.PayloadType)
	_, other := keySigned(t, payload, attest.PayloadType)
	bundle := marshalBundle(t, pb)
	otherSnap := clone(snap)
	changed := "something else"
	otherSnap.Instructions = &changed
	signerID, _ := KeyID(signer)
	otherID, _ := KeyID(other)
	tests := []struct {
		name          string
		key           crypto.PublicKey
		snap          bool // verify against another snapshot
		wantKey       string
		wantBundleKey string
	}{
		{name: "another key", key: other, wantKey: otherID, wantBundleKey: signerID},
		{name: "the signer's key, another step", key: signer, snap: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustVerifier(t, Trust{}, Policy{Method: MethodKey, PublicKey: tt.key})
			s := snap
			if tt.snap {
				s = otherSnap
			}
			_, err := v.Verify(context.Background(), bundle, s)
			if err == nil {
				t.Fatal("verified")
			}
			m := v.Explain(err, bundle)
			switch {
			case tt.wantKey == "" && m != nil:
				t.Fatalf("explained %+v", m)
			case tt.wantKey != "" && (m == nil || m.Step != StepSignature || m.Key != tt.wantKey || m.BundleKey != tt.wantBundleKey):
				t.Fatalf("explained %+v, want key %s and bundle key %s", m, tt.wantKey, tt.wantBundleKey)
			}
		})
	}
}
