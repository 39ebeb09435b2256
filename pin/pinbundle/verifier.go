package pinbundle

import (
	"context"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// Verifier returns a function, usable as a proxy.VerifyFunc, that verifies
// the bundle file at bundlePath with v (its trust and policy) against the
// observed definitions, reading the file anew on every call (a host that
// updates a server and its bundle together gets the update approved), and
// returns what the verification established (VerifiedOf): the approval to
// record, the signed server and the verified signing time.
func Verifier(v *verify.Verifier, bundlePath string) func(context.Context, *digest.Snapshot) (pin.Verified, error) {
	return VerifierOf(v, func(context.Context, *digest.Snapshot) ([]byte, error) {
		data, err := verify.ReadBundleFile(bundlePath)
		if err != nil {
			return nil, fmt.Errorf("reading the bundle: %w", err)
		}
		return data, nil
	})
}

// BundleFunc returns the bundle to verify the observed definitions snap
// against: read from a file or a URL, or the one the server advertised
// (snap.Advertised).
type BundleFunc func(ctx context.Context, snap *digest.Snapshot) ([]byte, error)

// VerifierOf is Verifier with the bundle from get, called anew on every
// verification.
func VerifierOf(v *verify.Verifier, get BundleFunc) func(context.Context, *digest.Snapshot) (pin.Verified, error) {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		data, err := get(ctx, snap)
		if err != nil {
			return pin.Verified{}, err
		}
		res, err := v.Verify(ctx, data, snap)
		if err != nil {
			return pin.Verified{}, err
		}
		return VerifiedOf(res), nil
	}
}
