package proxy

import (
	"context"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// BundleVerifier returns a VerifyFunc that verifies the bundle file at
// bundlePath with v (its trust and policy) against the observed
// definitions, reading the file anew on every call, and returns the
// approval to record (pin.ApprovalOf): method, signer identity and issuer,
// bundle digest and log entry.
func BundleVerifier(v *verify.Verifier, bundlePath string) VerifyFunc {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Approval, error) {
		data, err := verify.ReadBundleFile(bundlePath)
		if err != nil {
			return pin.Approval{}, fmt.Errorf("reading the bundle: %w", err)
		}
		res, err := v.Verify(ctx, data, snap)
		if err != nil {
			return pin.Approval{}, err
		}
		return pin.ApprovalOf(res), nil
	}
}
