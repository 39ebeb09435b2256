package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
)

// resolvePolicy reads --policy and resolves --name, after refusing every
// flag the policy replaces (except those in keep).
func resolvePolicy(cmd *cobra.Command, po *options.PolicyOptions, keep ...string) (*policy.Resolved, error) {
	if name := po.Conflict(cmd.Flags(), keep...); name != "" {
		return nil, fmt.Errorf("--%s and --policy: the policy file gives it for server --name; leave --%s out", name, name)
	}
	if po.Name == "" {
		return nil, errors.New("--policy needs --name NAME: the server's name in the policy file")
	}
	f, err := policy.Read(po.File)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	r, err := f.Resolve(po.Name, policy.ResolveOptions{})
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %w", textsafe.Escape(po.File), err)
	}
	return r, nil
}

// checkNames refuses --name without --policy.
func checkNames(po *options.PolicyOptions) error {
	if po.File == "" && po.Name != "" {
		return errors.New("--name is the server's name in a --policy file: give --policy FILE too")
	}
	return nil
}

// policyDecider is the decider of the verify flags a policy leaves to the
// command line, one for the command.
func policyDecider(f *verifyFlags) (*policy.Decider, error) {
	if f.decider != nil {
		return f.decider, nil
	}
	pkgs, err := f.vo.PackageRequirements()
	if err != nil {
		return nil, err
	}
	f.decider = policy.NewDecider(policy.DeciderOptions{Offline: f.trust.Offline, AllowCurrentTime: f.vo.AllowCurrentTime, Packages: pkgs})
	return f.decider, nil
}

// policyEntry prepares the decision under r (policy.Decider.Prepare).
func policyEntry(ctx context.Context, f *verifyFlags, r *policy.Resolved) (*policy.Entry, error) {
	d, err := policyDecider(f)
	if err != nil {
		return nil, err
	}
	e, err := d.Prepare(ctx, r)
	return e, policyHint(r)(err)
}

// policyHint says the errors of a decision under r with the flags that fix
// them.
func policyHint(r *policy.Resolved) func(error) error {
	return func(err error) error {
		var ie *policy.IdentityError
		switch {
		case errors.As(err, &ie):
			return &policy.IdentityError{Index: ie.Index, Identity: ie.Identity, Err: trustFlagHint(ie.Err, r.Identities[ie.Index].Method)}
		case errors.Is(err, policy.ErrNoLockBundle):
			return errors.New("no bundle to verify it with: the policy names none (give --bundle FILE or URL, or the server's \"bundle\" in the policy: a file, a URL or \"server\")")
		}
		return err
	}
}

// policyBundleInputs are the bundles to verify: every --bundle, else the
// one the policy names.
func policyBundleInputs(a *app, f *verifyFlags, r *policy.Resolved) (pinbundle.Locations, error) {
	out := pinbundle.Locations(r.BundleLocations(f.vo.Bundles, source.BundleOptions{HTTPClient: a.httpClient, Addresses: source.AnyAddress}))
	if len(out) == 0 {
		return nil, fmt.Errorf("--bundle FILE is required: the policy names no bundle for server %s", textsafe.Quote(r.Name))
	}
	return out, nil
}

// decideServed reads the bundles and the server and decides under r. An
// input error is err; a refused advertised bundle (dec nil) or a decision
// that does not hold is verr.
func decideServed(cmd *cobra.Command, a *app, f *verifyFlags, r *policy.Resolved, args []string) (snap *digest.Snapshot, dec *policy.Decision, verr, err error) {
	ctx := cmd.Context()
	e, err := policyEntry(ctx, f, r)
	if err != nil {
		return nil, nil, nil, err
	}
	inputs, err := policyBundleInputs(a, f, r)
	if err != nil {
		return nil, nil, nil, err
	}
	bundles, err := inputs.Early(ctx)
	if err = bundleFlag(err); err != nil {
		return nil, nil, nil, err
	}
	if snap, err = loadSource(cmd, a, &f.src, args); err != nil {
		return nil, nil, nil, err
	}
	if verr = inputs.Served(ctx, bundles, snap); verr != nil {
		return snap, nil, verr, nil
	}
	dec, verr = e.Decide(ctx, bundles, snap)
	return snap, dec, verr, nil
}

// runVerifyWithPolicy is runVerify under --policy.
func runVerifyWithPolicy(cmd *cobra.Command, a *app, f *verifyFlags, args []string) error {
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	inputErr := reportInputError(a, asJSON)
	r, err := resolvePolicy(cmd, &f.pol, "lock")
	if err != nil {
		return inputErr(err)
	}
	f.src.PolicyClientCapabilities = r.ClientCapabilities
	// A lock written under a policy that pins the static resources records
	// them (docs/LOCK.md, "resources").
	f.src.Resources = f.vo.WriteLock != "" && r.Resources == policy.ResourcesPin
	snap, dec, verr, err := decideServed(cmd, a, f, r, args)
	if err != nil {
		return inputErr(err)
	}
	if dec == nil {
		return writeVerifyFailure(a, asJSON, verr)
	}
	res := dec.First()
	if verr == nil && f.vo.WriteLock != "" {
		if err := writeVerifiedLock(cmd, f, snap, res); err != nil {
			return err
		}
	}
	// A failure past verification (threshold, revocation, age, package) is
	// reported with the result that did verify.
	if err := writeVerifyReport(a, asJSON, res, verr); err != nil {
		return err
	}
	if !asJSON {
		dec.WriteText(a.stdout)
	}
	if verr == nil && f.vo.WriteLock != "" && !asJSON {
		fmt.Fprintf(a.stdout, "\nlock written to %s\n", f.vo.WriteLock)
	}
	return verifyExit(verr, !asJSON)
}

// runPinWithPolicy is runPin under --policy: the lock, the audit log and
// the bundles' verification come from the policy; a server it lets pin on
// first use (no identity, "unsigned": "tofu") is pinned as --tofu is.
func runPinWithPolicy(cmd *cobra.Command, a *app, f *verifyFlags, po *options.PinOptions, asJSON bool, args []string) error {
	r, err := resolvePolicy(cmd, &f.pol)
	if err != nil {
		return err
	}
	f.src.PolicyClientCapabilities = r.ClientCapabilities
	po.Lock, po.Audit.Log = r.Lock, r.Audit
	if err := pinResources(f, po, r); err != nil {
		return err
	}
	if err := r.EnsureLockDir(); err != nil {
		return err
	}
	if err := auditevent.CheckLockOutputs(po.Lock, po.Force, po.Audit.Log); err != nil {
		return err
	}
	overrides, err := options.ReadOverrides(po.Capabilities)
	if err != nil {
		return err
	}
	if len(r.Identities) == 0 {
		snap, err := loadSource(cmd, a, &f.src, args)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "mcpsign: WARNING: policy %s: \"unsigned\": \"tofu\": trusting these definitions on first use;\n"+
			"mcpsign: WARNING: no signature vouches for them.\n", textsafe.Quote(r.Name))
		return writePinLock(cmd, a, asJSON, po, snap, pin.Approval{Method: pin.MethodTOFU}, overrides)
	}
	snap, dec, verr, err := decideServed(cmd, a, f, r, args)
	if err != nil {
		return err
	}
	if verr != nil {
		return pinRefused(a, asJSON, dec.First(), verr, "the bundles do not meet policy "+textsafe.Quote(r.Name))
	}
	return writePinLock(cmd, a, asJSON, po, snap, dec.Approval(), overrides)
}

// checkLockInForce decides whether l, the lock at r's lock path, may be in
// force under r (policy.Decider.CheckLock), re-verifying a signed lock
// with f's --bundle, else the policy's bundle; snap is what the server
// serves (nil before it is read). A drifted snap cannot re-verify it.
func checkLockInForce(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved, l *pin.Lock, snap *digest.Snapshot, drifted bool) error {
	d, err := policyDecider(f)
	if err != nil {
		return err
	}
	opts := policy.LockCheck{Hint: policyHint(r)}
	if len(f.vo.Bundles) > 0 || r.Bundle.Kind != policy.BundleNone {
		opts.Bundles = func(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
			inputs, err := policyBundleInputs(a, f, r)
			if err != nil {
				return nil, err
			}
			bundles, err := inputs.ForLock(ctx, snap)
			return bundles, bundleFlag(err)
		}
	}
	var st policy.LockStanding
	if snap == nil {
		st, err = d.CheckLock(ctx, r, l, nil, opts)
	} else {
		st, err = d.CheckServedLock(ctx, r, l, snap, drifted, opts)
	}
	if st.OverridesDropped {
		fmt.Fprintf(a.stderr, "mcpsign: policy %s: the capability overrides of %s are not applied: no bundle signs them (docs/POLICY.md \"The lock in force\")\n", textsafe.Quote(r.Name), textsafe.Escape(r.Lock))
	}
	return err
}

// runProxyWithPolicy is runProxy under --policy, resolved here, before the
// hand-over to mcpsign-proxy: the lock, first use (a bundle, or "unsigned":
// "tofu" for a server with no identity), the roll-forward rule and the
// audit log come from the policy, and the mode. A lock resting on a revoked
// item blocks at start.
func runProxyWithPolicy(cmd *cobra.Command, a *app, cfg *proxycmd.Config, f *verifyFlags) error {
	abs, err := filepath.Abs(f.pol.File)
	if err != nil {
		return err
	}
	f.pol.File = abs // for proxy-verify, whatever its directory
	r, err := resolvePolicy(cmd, &f.pol)
	if err != nil {
		return err
	}
	if err := r.EnsureLockDir(); err != nil {
		return err
	}
	cfg.Lock, cfg.AuditLog, cfg.ManualRollForward = r.Lock, r.Audit, r.RollForward == policy.RollForwardManual
	cfg.TOFU = len(r.Identities) == 0 && r.Unsigned == policy.UnsignedTOFU
	cfg.Mode = string(r.Mode)
	if cfg.Resources != "" {
		return errors.New("--resources: the policy decides (its \"resources\" member): give one or the other")
	}
	cfg.Resources = string(r.Resources)
	if r.Mode == policy.ModeAudit && r.Audit == "" {
		return fmt.Errorf("--policy %s: server %s: mode audit records drift only in the audit log: add \"audit\" (its path) to the server or the defaults", textsafe.Escape(f.pol.File), textsafe.Quote(r.Name))
	}
	if cfg.Admission, err = proxyAdmission(cmd.Context(), a, f, r); err != nil {
		return err
	}
	var vf proxy.VerifyFunc
	if len(r.Identities) > 0 {
		if vf, err = policyVerifyFunc(cmd.Context(), a, f, r); err != nil {
			return err
		}
	}
	if cfg.TOFU {
		fmt.Fprintf(a.stderr, "mcpsign: policy %s: \"unsigned\": \"tofu\": with no lock, the first definitions seen are pinned (no signature vouches for them)\n", textsafe.Quote(r.Name))
	}
	return startProxy(cmd, a, cfg, vf)
}

// proxyAdmission is what the proxy enforces of r's rules for the lock in
// force (proxy.Admission): the lock in force satisfies the policy, or the
// proxy does not start (docs/POLICY.md "The lock in force"); the proxy
// then enforces that very lock, re-verified with the server's bundle at
// the first listing when only that bundle can prove it.
func proxyAdmission(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved) (*proxy.Admission, error) {
	adm := &proxy.Admission{AllowTOFU: r.Allows(pin.MethodTOFU), AllowManual: r.Allows(pin.MethodManual)}
	l, err := pin.Read(r.Lock)
	if err != nil {
		// None: a first use. Unreadable: the proxy refuses it, naming the
		// file, as without a policy.
		return adm, nil
	}
	var out *policy.OutsideError
	switch err := checkLockInForce(ctx, a, f, r, l, nil, false); {
	case errors.Is(err, policy.ErrNeedsServer):
		adm.Reverify = true
	case errors.As(err, &out):
		return nil, withCode(proxycmd.ExitBlocked, fmt.Errorf("blocked: %s: %s %s: %w", out.Rule, textsafe.Escape(r.Lock), textsafe.Quote(r.Name), out))
	case err != nil:
		return nil, err
	}
	adm.LockDigest = l.LockDigest
	return adm, nil
}

// policyVerifyFunc verifies what the proxy observed under the policy: the
// bundles, read anew, of k distinct identities (policy.Entry.VerifyFunc);
// nil when neither --bundle nor the policy names a bundle.
func policyVerifyFunc(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved) (proxy.VerifyFunc, error) {
	e, err := policyEntry(ctx, f, r)
	if err != nil || len(f.vo.Bundles) == 0 && r.Bundle.Kind == policy.BundleNone {
		return nil, err
	}
	inputs, err := policyBundleInputs(a, f, r)
	if err != nil {
		return nil, err
	}
	vf := e.VerifyFunc(func(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
		bundles, err := inputs.Fresh(ctx, snap)
		return bundles, freshBundleFlag(err)
	})
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		v, err := vf(ctx, snap)
		return v, withFlagHint(err)
	}, nil
}
