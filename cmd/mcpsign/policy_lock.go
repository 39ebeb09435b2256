package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
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

// lockOutsidePolicy is a lock in force that the policy does not allow:
// Rule is rulePolicyRevoked or one of policy's RuleLock* findings.
type lockOutsidePolicy struct {
	Rule string
	Err  error
}

func (e *lockOutsidePolicy) Error() string {
	if e.Rule == rulePolicyRevoked {
		return fmt.Sprintf("the lock rests on a %v: it approves nothing; verify a new bundle and pin again", e.Err)
	}
	var le *policy.LockError
	if errors.As(e.Err, &le) && le.Rule == policy.RuleLockUnproven {
		return le.Reason + ": the lock approves nothing under this policy until a bundle proves it"
	}
	if errors.As(e.Err, &le) {
		return le.Reason + ": the lock approves nothing under this policy; pin again under it"
	}
	return e.Err.Error()
}

func (e *lockOutsidePolicy) Unwrap() error { return e.Err }

// errNeedsServer is why checkLockInForce could not re-verify a lock yet:
// its bundle is the one the server advertises.
var errNeedsServer = errors.New("the bundle is the one the server advertises, read only with the server's definitions")

// checkLockInForce decides whether l, the lock at r's lock path, may be in
// force under r (docs/POLICY.md "The lock in force"): it rests on nothing
// revoked, and its approval satisfies the policy
// (policy.Resolved.CheckApproval). A signed lock whose record names a
// listed signer is re-verified, whatever the record shows (a record is no
// proof: the server's user can write it): the policy's
// bundles (f's --bundle, else the policy's bundle) must verify the lock's
// definitions under the policy, the first being the one the lock records.
// A proven signed lock's capability overrides are dropped from l (no
// bundle signs them). snap, when not nil, is what the server serves, and
// matches the lock;
// with none, a bundle the server advertises cannot be read, and the error
// is errNeedsServer. Anything else fails closed: the error is a
// *lockOutsidePolicy naming the rule.
func checkLockInForce(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved, l *pin.Lock, snap *digest.Snapshot) error {
	if err := lockRevoked(r, l); err != nil {
		return &lockOutsidePolicy{Rule: rulePolicyRevoked, Err: err}
	}
	err := r.CheckApproval(l.Approval)
	if err == nil && l.Approval.Method.Valid() {
		// A record is no proof: a process that can write the lock (the
		// server, as the host's user) can record a listed signer over its
		// own definitions. A signed lock is in force only when its bundle
		// verifies it.
		err = &policy.LockError{Rule: policy.RuleLockUnproven, Reason: fmt.Sprintf("the lock records a signature by %s, and a record is no proof (anything that can write the lock can write it)", textsafe.Quote(string(l.Approval.Method)+" "+l.Approval.Identity))}
	}
	var le *policy.LockError
	if !errors.As(err, &le) {
		return err
	}
	if le.Rule == policy.RuleLockUnproven {
		rerr := reverifyLock(ctx, a, f, r, l, snap)
		if rerr == nil && len(l.Capabilities) > 0 && l.Approval.Method.Valid() {
			// No bundle signs the approver's capability overrides, and
			// the server's user can add some to a proven lock to hide
			// what a changed tool gains: the computed capabilities apply
			// (what removing the overrides, which it can do too, gives).
			fmt.Fprintf(a.stderr, "mcpsign: policy %s: the capability overrides of %s are not applied: no bundle signs them (docs/POLICY.md \"The lock in force\")\n", textsafe.Quote(r.Name), textsafe.Escape(r.Lock))
			l.Capabilities = nil
		}
		if rerr == nil || errors.Is(rerr, errNeedsServer) {
			return rerr
		}
		le = &policy.LockError{Rule: le.Rule, Reason: le.Reason + "; re-verifying the bundle it records: " + rerr.Error()}
	}
	return &lockOutsidePolicy{Rule: le.Rule, Err: le}
}

// reverifyLock verifies the policy's bundles against the definitions the
// lock holds (snap's, which match them, when snap is not nil), under r, and
// checks that the first is the lock's approval.
func reverifyLock(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved, l *pin.Lock, snap *digest.Snapshot) error {
	if len(f.vo.Bundles) == 0 && r.Bundle.Kind == policy.BundleNone {
		return errors.New("no bundle to verify it with: the policy names none (give --bundle FILE or URL, or the server's \"bundle\" in the policy: a file, a URL or \"server\")")
	}
	e, err := policyEntry(ctx, f, r)
	if err != nil {
		return err
	}
	inputs, err := policyBundleInputs(a, f, r)
	if err != nil {
		return err
	}
	bundles, err := earlyBundles(ctx, inputs)
	if err != nil {
		return err
	}
	defs := l.Snapshot()
	for i, b := range inputs {
		if !b.fromServer {
			continue
		}
		if snap == nil {
			return errNeedsServer
		}
		if bundles[i], err = b.advertised(ctx, snap); err != nil {
			return err
		}
		defs = snap
	}
	tr, err := e.Decide(ctx, bundles, defs)
	if err != nil {
		return err
	}
	got, want := pinbundle.ApprovalOf(tr.First()), l.Approval
	if got.Method != want.Method || got.Identity != want.Identity || got.Issuer != want.Issuer || got.BundleDigest != want.BundleDigest {
		return fmt.Errorf("the bundles verify, but the first, %s, is not the bundle %s the lock records", got.BundleDigest, want.BundleDigest)
	}
	// The proxy takes the lock's signing time from the entry it records
	// (pin.Lock.EvidenceTime): one the bundle does not hold is refused (a
	// lock that records none, pinned under a policy that did not require
	// one, holds no claim).
	if want.Tlog != nil && (got.Tlog == nil || !got.Tlog.Equal(*want.Tlog)) {
		return errors.New("the bundles verify, but the transparency log entry the lock records is not the first bundle's")
	}
	return nil
}

// outsidePolicyReport is the verify-pin report of a lock the policy does
// not allow (checkLockInForce).
func outsidePolicyReport(path string, err *lockOutsidePolicy) *pin.Report {
	return &pin.Report{Lock: path, Counts: map[string]int{}, Findings: []pin.Finding{{
		Rule: err.Rule, Severity: pin.SeverityError, Message: textsafe.Escape(err.Error()),
	}}}
}

// admission is what the proxy enforces of r's rules for the lock in force
// (proxy.Admission): l, the lock checkLockInForce let stand (nil: none),
// and whether a tofu or a manual lock written by another process on first
// use is allowed.
func admission(r *policy.Resolved, l *pin.Lock) *proxy.Admission {
	adm := &proxy.Admission{
		AllowTOFU:   r.CheckApproval(pin.Approval{Method: pin.MethodTOFU}) == nil,
		AllowManual: r.CheckApproval(pin.Approval{Method: pin.MethodManual}) == nil,
	}
	if l != nil {
		adm.LockDigest = l.LockDigest
	}
	return adm
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
func policyVerifyFunc(e *policy.Entry, inputs []*bundleInput) func(context.Context, *digest.Snapshot) (pin.Verified, error) {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		var bundles [][]byte
		for _, b := range inputs {
			data, err := b.get(ctx, snap)
			if err != nil {
				return pin.Verified{}, err
			}
			bundles = append(bundles, data)
		}
		tr, err := e.Decide(ctx, bundles, snap)
		if err != nil {
			return pin.Verified{}, withFlagHint(err)
		}
		return pinbundle.VerifiedOf(tr.First()), nil
	}
}
