package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
)

// rulePolicyRevoked is the finding of a lock whose approval rests on an
// item the policy revokes (docs/POLICY.md "revoked"): it blocks at start,
// under every --fail-on.
const rulePolicyRevoked = "policy-revoked"

// lockRevoked returns the revoked item the lock rests on (its approval's
// identity or bundle, or one of its definitions), nil if none.
func lockRevoked(r *policy.Resolved, l *pin.Lock) error {
	defs := make([]string, 0, len(l.Definitions))
	for _, d := range l.Definitions {
		defs = append(defs, d.Digest)
	}
	return r.Revoked.Check(l.Approval.Identity, l.Approval.BundleDigest, defs)
}

// revokedReport is the verify-pin report of a lock resting on a revoked item.
func revokedReport(path string, err error) *pin.Report {
	return &pin.Report{Lock: path, Counts: map[string]int{}, Findings: []pin.Finding{{
		Rule: rulePolicyRevoked, Severity: pin.SeverityError,
		Message: textsafe.Escape(fmt.Sprintf("the lock rests on a %v: it approves nothing; verify a new bundle and pin again", err)),
	}}}
}

// ensureLockDir makes the directory of a policy's default lock (under the
// user state directory), private to the user.
func ensureLockDir(r *policy.Resolved) error {
	if !r.DefaultLock {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.Lock), 0o700); err != nil {
		return fmt.Errorf("the lock directory of server %s: %w", textsafe.Quote(r.Name), err)
	}
	return nil
}

// policyVerifyFunc verifies what the proxy observed under the policy: the
// bundles of the inputs, k distinct identities (verifyThreshold).
func policyVerifyFunc(r *policy.Resolved, vs []policyVerifier, inputs []*bundleInput) func(context.Context, *digest.Snapshot) (pin.Verified, error) {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		var bundles [][]byte
		for _, b := range inputs {
			data, err := b.get(ctx, snap)
			if err != nil {
				return pin.Verified{}, err
			}
			bundles = append(bundles, data)
		}
		tr, err := verifyThreshold(ctx, r, vs, bundles, snap)
		if err != nil {
			return pin.Verified{}, withFlagHint(err)
		}
		return pinbundle.VerifiedOf(tr.First), nil
	}
}
