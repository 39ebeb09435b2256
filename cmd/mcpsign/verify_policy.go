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
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
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
		return nil, fmt.Errorf("--policy %s: %w", po.File, err)
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

// policyGate is the gate of r for the command (policy.Gate): the verify
// flags' bundles, said with the flags that fix its errors (policyHint), and
// one decider for the command, of the verify flags a policy leaves to the
// command line.
func policyGate(a *app, f *verifyFlags, r *policy.Resolved) (*policy.Gate, error) {
	if f.decider == nil {
		pkgs, err := f.vo.PackageRequirements()
		if err != nil {
			return nil, err
		}
		f.decider = policy.NewDecider(policy.DeciderOptions{Offline: f.trust.Root.Offline, AllowCurrentTime: f.vo.AllowCurrentTime, Packages: pkgs})
	}
	return &policy.Gate{Decider: f.decider, Policy: r, Bundles: f.vo.Bundles, BundleOptions: f.bundleOptions(a), Hint: policyHint(r),
		OverridesDropped: func() {
			fmt.Fprintf(a.stderr, "mcpsign: policy %s: the capability overrides of %s are not applied: no bundle signs them (docs/POLICY.md \"The lock in force\")\n", textsafe.Quote(r.Name), textsafe.Escape(r.Lock))
		}}, nil
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
		case errors.Is(err, policy.ErrNoBundle):
			return fmt.Errorf("--bundle FILE is required: %w", err)
		}
		return bundleFlag(err)
	}
}

// policyBundleInputs are the bundles to verify: every --bundle, else the
// one the policy names (policy.Gate.Locations).
func policyBundleInputs(a *app, f *verifyFlags, r *policy.Resolved) (pinbundle.Locations, error) {
	g := policy.Gate{Policy: r, Bundles: f.vo.Bundles, BundleOptions: f.bundleOptions(a), Hint: policyHint(r)}
	return g.Locations()
}

// decideServed reads the bundles and the server and decides under r
// (policy.Gate.Decide).
func decideServed(cmd *cobra.Command, a *app, f *verifyFlags, r *policy.Resolved, args []string) (*policy.Served, error) {
	g, err := policyGate(a, f, r)
	if err != nil {
		return nil, err
	}
	return g.Decide(cmd.Context(), func(context.Context) (*digest.Snapshot, error) { return loadSource(cmd, a, &f.src, args) })
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
	f.src.Listing.Resources = f.vo.WriteLock != "" && r.Resources == policy.ResourcesPin
	sv, err := decideServed(cmd, a, f, r, args)
	if err != nil {
		return inputErr(err)
	}
	if sv.Decision == nil {
		return reportVerify(a, asJSON, nil, sv.Err)
	}
	// A failure past verification (threshold, revocation, age, package) is
	// reported with the result that did verify.
	if err := reportVerified(cmd, a, f, asJSON, sv.Snapshot, sv.Decision.First(), sv.Bundles, sv.Err, sv.Decision.WriteText); err != nil {
		return err
	}
	return verifyExit(sv.Err, !asJSON)
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
		return pinTOFU(cmd, a, f, asJSON, po, overrides, args, fmt.Sprintf("mcpsign: WARNING: policy %s: \"unsigned\": \"tofu\": trusting these definitions on first use;\n"+
			"mcpsign: WARNING: no signature vouches for them.\n", textsafe.Quote(r.Name)))
	}
	sv, err := decideServed(cmd, a, f, r, args)
	if err != nil {
		return err
	}
	if sv.Err != nil {
		return pinRefused(a, asJSON, sv.Decision.First(), sv.Err, "the bundles do not meet policy "+textsafe.Quote(r.Name))
	}
	return writePinLock(cmd, a, asJSON, po, sv.Snapshot, sv.Decision.Approval(), sv.Bundles, overrides)
}

// runProxyWithPolicy is runProxy under --policy, resolved here, before the
// hand-over to mcpsign-proxy: how the proxy starts under the policy
// (policy.Gate.Proxy: the lock, first use, the roll-forward rule, the
// audit log, the mode, and the admission of the lock in force). A lock
// resting on a revoked item blocks at start.
func runProxyWithPolicy(cmd *cobra.Command, a *app, cfg *proxycmd.Config, f *verifyFlags, start proxyStarter) error {
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
	if cfg.Resources != "" {
		return errors.New("--resources: the policy decides (its \"resources\" member): give one or the other")
	}
	g, err := policyGate(a, f, r)
	if err != nil {
		return err
	}
	st, err := g.Proxy(cmd.Context())
	var out *policy.OutsideError
	switch {
	case errors.Is(err, policy.ErrAuditNoLog):
		return fmt.Errorf("--policy %s: %w", f.pol.File, err)
	case errors.As(err, &out):
		return withCode(proxycmd.ExitBlocked, fmt.Errorf("blocked: %s: %s %s: %w", out.Rule, r.Lock, textsafe.RawQuote(r.Name), out))
	case err != nil:
		return err
	}
	adm := proxy.Admission(st.Admission)
	cfg.Lock, cfg.AuditLog, cfg.ManualRollForward, cfg.TOFU = st.Lock, st.AuditLog, st.ManualRollForward, st.TOFU
	cfg.Mode, cfg.Resources, cfg.Admission = string(st.Mode), string(st.Resources), &adm
	cfg.ServerRequests = proxyServerRequests(r.ServerRequests)
	var vf proxy.VerifyFunc
	if len(r.Identities) > 0 {
		if vf, err = policyVerifyFunc(cmd.Context(), a, f, r); err != nil {
			return err
		}
	}
	if cfg.TOFU {
		fmt.Fprintf(a.stderr, "mcpsign: policy %s: \"unsigned\": \"tofu\": with no lock, the first definitions seen are pinned (no signature vouches for them)\n", textsafe.Quote(r.Name))
	}
	return start(cmd, a, cfg, vf)
}

// policyVerifyFunc verifies what the proxy observed under the policy
// (policy.Gate.VerifyFunc); nil when neither --bundle nor the policy names
// a bundle.
func policyVerifyFunc(ctx context.Context, a *app, f *verifyFlags, r *policy.Resolved) (proxy.VerifyFunc, error) {
	g, err := policyGate(a, f, r)
	if err != nil {
		return nil, err
	}
	vf, err := g.VerifyFunc(ctx)
	if vf == nil {
		return nil, err
	}
	return flagHinted(vf), nil
}

// proxyServerRequests is the proxy's side of a policy's serverRequests
// (docs/POLICY.md): each kind the policy denies.
func proxyServerRequests(sr policy.ServerRequests) proxy.ServerRequests {
	return proxy.ServerRequests{
		DenySampling:    sr.Sampling == policy.RuleDeny,
		DenyElicitation: sr.Elicitation == policy.RuleDeny,
		DenyRoots:       sr.Roots == policy.RuleDeny,
		DenyLogging:     sr.Logging == policy.RuleDeny,
	}
}
