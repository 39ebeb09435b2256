package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/verify"
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

// policyEntry prepares the decision under r (policy.Decider.Prepare) with
// the verify flags a policy leaves to the command line, saying a trust
// failure with the flags that fix it.
func policyEntry(ctx context.Context, f *verifyFlags, r *policy.Resolved) (*policy.Entry, error) {
	pkgs, err := f.vo.PackageRequirements()
	if err != nil {
		return nil, err
	}
	d := policy.NewDecider(policy.DeciderOptions{Offline: f.trust.Offline, AllowCurrentTime: f.vo.AllowCurrentTime, Packages: pkgs})
	e, err := d.Prepare(ctx, r)
	var ie *policy.IdentityError
	if errors.As(err, &ie) {
		return nil, &policy.IdentityError{Index: ie.Index, Identity: ie.Identity, Err: trustFlagHint(ie.Err, r.Identities[ie.Index].Method)}
	}
	return e, err
}

// policyBundleInputs are the bundles to verify: every --bundle, else the
// one the policy names.
func policyBundleInputs(a *app, f *verifyFlags, r *policy.Resolved) ([]*bundleInput, error) {
	var vos []options.VerifyOptions
	switch {
	case len(f.vo.Bundles) > 0:
		for _, b := range f.vo.Bundles {
			vos = append(vos, options.VerifyOptions{Bundle: b})
		}
	case r.Bundle.Kind == policy.BundleServer:
		vos = append(vos, options.VerifyOptions{BundleFromServer: true})
	case r.Bundle.Kind != policy.BundleNone:
		vos = append(vos, options.VerifyOptions{Bundle: r.Bundle.Location})
	default:
		return nil, fmt.Errorf("--bundle FILE is required: the policy names no bundle for server %s", textsafe.Quote(r.Name))
	}
	var out []*bundleInput
	for i := range vos {
		b, err := newBundleInput(a, &vos[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// earlyBundles reads the bundles of inputs that come before the source
// (bundleInput.early): nil for one the server advertises, read with the
// snapshot.
func earlyBundles(ctx context.Context, inputs []*bundleInput) ([][]byte, error) {
	bundles := make([][]byte, 0, len(inputs))
	for _, b := range inputs {
		data, err := b.early(ctx)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	return bundles, nil
}

// runVerifyWithPolicy is runVerify under --policy.
func runVerifyWithPolicy(cmd *cobra.Command, a *app, f *verifyFlags, args []string) error {
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	inputErr := func(err error) error {
		if asJSON {
			_ = writeVerifyJSON(a.stdout, verify.NewReport(nil, err))
		}
		return err
	}
	r, err := resolvePolicy(cmd, &f.pol, "lock")
	if err != nil {
		return inputErr(err)
	}
	f.src.PolicyClientCapabilities = r.ClientCapabilities
	// A lock written under a policy that pins the static resources records
	// them (docs/LOCK.md, "resources").
	f.src.Resources = f.vo.WriteLock != "" && r.Resources == policy.ResourcesPin
	e, err := policyEntry(cmd.Context(), f, r)
	if err != nil {
		return inputErr(err)
	}
	inputs, err := policyBundleInputs(a, f, r)
	if err != nil {
		return inputErr(err)
	}
	bundles, err := earlyBundles(cmd.Context(), inputs)
	if err != nil {
		return inputErr(err)
	}
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return inputErr(err)
	}
	for i, b := range inputs {
		if b.fromServer {
			if bundles[i], err = b.advertised(cmd.Context(), snap); err != nil {
				return writeVerifyFailure(a, asJSON, err)
			}
		}
	}
	tr, verr := e.Decide(cmd.Context(), bundles, snap)
	res := tr.First()
	if verr == nil && f.vo.WriteLock != "" {
		if err := writeVerifiedLock(cmd, f, snap, res); err != nil {
			return err
		}
	}
	// A failure past verification (threshold, revocation, age, package) is
	// reported with the result that did verify.
	rep := verr
	if asJSON {
		err = writeVerifyJSON(a.stdout, verify.NewReport(res, rep))
	} else {
		err = writeVerifyText(a.stdout, res, rep)
		if err == nil {
			writeThreshold(a.stdout, r, tr)
		}
	}
	if err != nil {
		return err
	}
	if verr == nil && f.vo.WriteLock != "" && !asJSON {
		fmt.Fprintf(a.stdout, "\nlock written to %s\n", f.vo.WriteLock)
	}
	return verifyExit(rep, !asJSON)
}

// writeThreshold says which distinct signers met the policy.
func writeThreshold(w io.Writer, r *policy.Resolved, tr *policy.Decision) {
	fmt.Fprintf(w, "\npolicy %s: %d of %d distinct identities required, %d signed\n", textsafe.Escape(r.Name), r.Threshold, len(r.Identities), tr.Matched)
	for _, s := range tr.Signers {
		var ids []string
		for _, i := range s.Identities {
			ids = append(ids, fmt.Sprint(i))
		}
		fmt.Fprintf(w, "  signer %s %s (identities %s)\n", s.Result.Method, textsafe.Quote(s.Result.Identity), strings.Join(ids, ", "))
	}
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
	if err := ensureLockDir(r); err != nil {
		return err
	}
	if err := checkLockOutputs(po.Lock, po.Force, po.Audit.Log); err != nil {
		return err
	}
	overrides, err := options.ReadOverrides(po.Capabilities)
	if err != nil {
		return err
	}
	approval := pin.Approval{Method: pin.MethodTOFU}
	if len(r.Identities) == 0 {
		snap, err := loadSource(cmd, a, &f.src, args)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "mcpsign: WARNING: policy %s: \"unsigned\": \"tofu\": trusting these definitions on first use;\n"+
			"mcpsign: WARNING: no signature vouches for them.\n", textsafe.Quote(r.Name))
		return writePinLock(cmd, a, asJSON, po, snap, approval, overrides)
	}
	e, err := policyEntry(cmd.Context(), f, r)
	if err != nil {
		return err
	}
	inputs, err := policyBundleInputs(a, f, r)
	if err != nil {
		return err
	}
	bundles, err := earlyBundles(cmd.Context(), inputs)
	if err != nil {
		return err
	}
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return err
	}
	var verr error
	for i, b := range inputs {
		if b.fromServer && verr == nil {
			bundles[i], verr = b.advertised(cmd.Context(), snap)
		}
	}
	var tr *policy.Decision
	if verr == nil {
		tr, verr = e.Decide(cmd.Context(), bundles, snap)
	}
	if verr != nil {
		var res *verify.Result
		if tr != nil {
			res = tr.First()
		}
		if asJSON {
			err = writeVerifyJSON(a.stdout, verify.NewReport(res, verr))
		} else {
			err = writeVerifyText(a.stdout, res, verr)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "mcpsign: nothing pinned: the bundles do not meet policy %s\n", textsafe.Quote(r.Name))
		return verifyExit(verr, true)
	}
	return writePinLock(cmd, a, asJSON, po, snap, pinbundle.ApprovalOf(tr.First()), overrides)
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
	if err := ensureLockDir(r); err != nil {
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
	// The lock in force satisfies the policy, or the proxy does not start
	// (docs/POLICY.md "The lock in force"); the proxy then enforces that
	// very lock (cfg.Admission).
	reverify := false
	l, err := pin.Read(r.Lock)
	if err != nil {
		// None: a first use. Unreadable: the proxy refuses it, naming the
		// file, as without a policy.
		l = nil
	} else {
		var out *lockOutsidePolicy
		switch err := checkLockInForce(cmd.Context(), a, f, r, l, nil); {
		case errors.Is(err, errNeedsServer):
			// The proxy re-verifies it with the server's bundle, at the
			// first listing (proxy.Admission.Reverify).
			reverify = true
		case errors.As(err, &out):
			return withCode(proxycmd.ExitBlocked, fmt.Errorf("blocked: %s: %s %s: %w", out.Rule, textsafe.Escape(r.Lock), textsafe.Quote(r.Name), out))
		case err != nil:
			return err
		}
	}
	cfg.Admission = admission(r, l)
	cfg.Admission.Reverify = reverify
	var vf proxy.VerifyFunc
	if len(r.Identities) > 0 {
		e, err := policyEntry(cmd.Context(), f, r)
		if err != nil {
			return err
		}
		var inputs []*bundleInput
		if len(f.vo.Bundles) > 0 || r.Bundle.Kind != policy.BundleNone {
			if inputs, err = policyBundleInputs(a, f, r); err != nil {
				return err
			}
			vf = policyVerifyFunc(e, inputs)
		}
	}
	if cfg.TOFU {
		fmt.Fprintf(a.stderr, "mcpsign: policy %s: \"unsigned\": \"tofu\": with no lock, the first definitions seen are pinned (no signature vouches for them)\n", textsafe.Quote(r.Name))
	}
	return startProxy(cmd, a, cfg, vf)
}
