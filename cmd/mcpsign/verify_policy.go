package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/verify"
)

// errThreshold is a policy threshold that the bundles do not meet.
var errThreshold = errors.New("policy threshold not met")

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

// policyTrust is the trust options of the policy for method m (the
// enterprise CAs only for the certificate method, which alone uses them).
func policyTrust(r *policy.Resolved, offline bool, m verify.Method) *options.TrustOptions {
	t := &options.TrustOptions{TrustedRoot: r.Trust.TrustedRoot, TUFCache: r.Trust.TUFCache, TUFMirror: r.Trust.TUFMirror, Offline: offline}
	if m == verify.MethodCertificate {
		t.CARoots, t.CAIntermediates = r.Trust.CARoots, r.Trust.CAIntermediates
	}
	return t
}

// policyVerifier verifies under some of the identities of a policy: ids
// are their indices in the policy, in the order of the verifier's
// verify.Policy.Identities (one index for a key).
type policyVerifier struct {
	v   *verify.Verifier
	ids []int
}

// numberIdentities names the identities of an identity failure by their
// index in the policy.
func (pv policyVerifier) numberIdentities(err error) {
	var ie *verify.IdentitiesError
	if errors.As(err, &ie) {
		ie.Names = nil
		for _, i := range pv.ids {
			ie.Names = append(ie.Names, fmt.Sprintf("identity %d", i))
		}
	}
}

// policyVerifiers returns the verifiers of the identities of r: one for
// all its sigstore identities and one for all its certificate identities
// (a bundle passes when any of them matches, and the result says which),
// and one per key, ordered by their first identity.
func policyVerifiers(ctx context.Context, f *verifyFlags, r *policy.Resolved) ([]policyVerifier, error) {
	if len(r.Identities) == 0 {
		return nil, fmt.Errorf("server %s has no identity in the policy (unsigned: tofu): no signature to verify", textsafe.Quote(r.Name))
	}
	pkgs, err := f.vo.PackageRequirements()
	if err != nil {
		return nil, err
	}
	var groups [][]int // identity indices, one group per verifier
	byMethod := map[verify.Method]int{}
	for i, id := range r.Identities {
		if g, ok := byMethod[id.Method]; ok && id.Method != verify.MethodKey {
			groups[g] = append(groups[g], i)
			continue
		}
		byMethod[id.Method] = len(groups)
		groups = append(groups, []int{i})
	}
	var vs []policyVerifier
	for _, g := range groups {
		first := r.Identities[g[0]]
		m := first.Method
		p := verify.Policy{
			Method:           m,
			RequireTlog:      r.RequireTlog && m != verify.MethodSigstore,
			RequireTimestamp: r.RequireTimestamp,
			AllowCurrentTime: f.vo.AllowCurrentTime && m == verify.MethodCertificate,
			Packages:         pkgs,
		}
		if m == verify.MethodKey {
			ko := options.IdentityOptions{Key: first.Key}
			if p.PublicKey, err = ko.PublicKey(); err != nil {
				return nil, fmt.Errorf("policy identity %d: %w", g[0], err)
			}
		} else {
			for _, i := range g {
				p.Identities = append(p.Identities, r.Identities[i].Identity)
			}
		}
		trust, err := verifyTrust(ctx, policyTrust(r, f.trust.Offline, m), p)
		if err != nil {
			return nil, fmt.Errorf("policy identity %d (%s): %w", g[0], textsafe.Escape(first.String()), err)
		}
		if f.trustUsed == nil {
			f.trustUsed = trust.Sigstore
		}
		v, err := verify.New(trust, p)
		if err != nil {
			return nil, fmt.Errorf("policy identity %d (%s): %w", g[0], textsafe.Escape(first.String()), err)
		}
		vs = append(vs, policyVerifier{v: v, ids: g})
	}
	return vs, nil
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

// stepRank orders the steps, to report the failure that got furthest.
var stepRank = []verify.Step{verify.StepBundle, verify.StepSignature, verify.StepChain, verify.StepTlog,
	verify.StepTime, verify.StepIdentity, verify.StepStatement, verify.StepMatch}

func rank(err error) int {
	s, ok := verify.FailedStep(err)
	if !ok {
		return -1
	}
	return slices.Index(stepRank, s)
}

// thresholdResult is what verifyThreshold established.
type thresholdResult struct {
	// First is the result of the first bundle (reported, and the lock's
	// evidence).
	First *verify.Result
	// Signers are the distinct signers, each with the listed identities
	// (indices) it satisfies; Matched is how many distinct identities a
	// one-to-one assignment of signers covers.
	Signers []signer
	Matched int
}

type signer struct {
	// keys tell the signer apart: its method, identity and issuer, and the
	// key ID of every key it signed with.
	keys       []string
	result     *verify.Result
	identities []int
}

// addSigner adds s to signers, merged with every signer that shares one
// of its keys: one identity is one signer whatever keys it signed with,
// and one private key is one signer whatever identities its certificates
// name (a key listed as a key and certified by an enterprise CA, or
// certified twice, signs once).
// The merged signer takes the place, and the result, of the first.
func addSigner(signers []signer, s signer) []signer {
	out := signers[:0:0]
	at := -1
	for _, o := range signers {
		if !slices.ContainsFunc(o.keys, func(k string) bool { return slices.Contains(s.keys, k) }) {
			out = append(out, o)
			continue
		}
		if at < 0 {
			at, s.result = len(out), o.result
		}
		for _, k := range o.keys {
			if !slices.Contains(s.keys, k) {
				s.keys = append(s.keys, k)
			}
		}
		for _, i := range o.identities {
			if !slices.Contains(s.identities, i) {
				s.identities = append(s.identities, i)
			}
		}
	}
	slices.Sort(s.identities)
	if at < 0 {
		return append(out, s)
	}
	return slices.Insert(out, at, s)
}

// verifyThreshold verifies every bundle against snap under every identity
// of r: each bundle must verify under at least one. Signers are told apart
// by what the verification established (method, identity, issuer), never
// by bundle: two bundles by one key are one signer. The threshold is met
// when k distinct identities can each be assigned a different signer.
func verifyThreshold(ctx context.Context, r *policy.Resolved, vs []policyVerifier, bundles [][]byte, snap *digest.Snapshot) (*thresholdResult, error) {
	tr := &thresholdResult{}
	n := len(r.Identities)
	for bi, data := range bundles {
		var best error
		var passed []*verify.Result // the first is reported
		var ids []int
		for _, pv := range vs {
			rr, err := pv.v.Verify(ctx, data, snap)
			if err != nil {
				pv.numberIdentities(err)
				if best == nil || rank(err) > rank(best) {
					best = err
				}
				continue
			}
			passed = append(passed, rr)
			if rr.MatchedIdentities == nil { // a key: the verifier's one identity
				ids = append(ids, pv.ids...)
			}
			for _, j := range rr.MatchedIdentities {
				ids = append(ids, pv.ids[j])
			}
		}
		slices.Sort(ids)
		if len(passed) == 0 {
			tr.Matched = matching(tr.Signers, n)
			return tr, numbered(best, bi, len(bundles))
		}
		if err := policyChecks(r, passed, snap); err != nil {
			tr.Matched = matching(tr.Signers, n)
			return tr, numbered(err, bi, len(bundles))
		}
		res := passed[0]
		if tr.First == nil {
			tr.First = res
		}
		key := string(res.Method) + "\x00" + res.Identity + "\x00" + res.Issuer
		tr.Signers = addSigner(tr.Signers, signer{keys: []string{key, "key\x00" + res.SignerKeyID}, result: res, identities: ids})
	}
	tr.Matched = matching(tr.Signers, n)
	if tr.Matched < r.Threshold {
		return tr, &verify.StepError{Step: verify.StepIdentity, Err: fmt.Errorf("%w: %d of the %d listed identities signed these definitions as distinct signers, %d required (%d bundle(s), %d distinct signer(s): two bundles by one signer count once)",
			errThreshold, tr.Matched, n, r.Threshold, len(bundles), len(tr.Signers))}
	}
	return tr, nil
}

// numbered names bundle i of n in err, keeping its step.
func numbered(err error, i, n int) error {
	if n < 2 {
		return err
	}
	var se *verify.StepError
	if errors.As(err, &se) {
		return &verify.StepError{Step: se.Step, Err: fmt.Errorf("bundle %d of %d: %w", i+1, n, se.Err)}
	}
	return fmt.Errorf("bundle %d of %d: %w", i+1, n, err)
}

// matching is the size of a maximum one-to-one assignment of signers to
// the identities each satisfies (augmenting paths; at most 32 identities).
func matching(signers []signer, n int) int {
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	var try func(s int, seen []bool) bool
	try = func(s int, seen []bool) bool {
		for _, id := range signers[s].identities {
			if seen[id] {
				continue
			}
			seen[id] = true
			if owner[id] < 0 || try(owner[id], seen) {
				owner[id] = s
				return true
			}
		}
		return false
	}
	count := 0
	for s := range signers {
		if try(s, make([]bool, n)) {
			count++
		}
	}
	return count
}

// policyChecks are the policy's checks beyond verify's, on the results of
// one bundle under each verifier it passed (the first is reported):
// revocation, the bundle's age and the package. An identity is revoked
// when any of what the verifications established names it: the identity
// each reports, the certificate's subject, or the key that signed (a
// revoked key ID refuses a certificate for that key too).
func policyChecks(r *policy.Resolved, results []*verify.Result, snap *digest.Snapshot) error {
	res := results[0]
	var defs []string
	if len(r.Revoked.Definitions) > 0 {
		l, err := pin.NewLock(snap, pinbundle.ApprovalOf(res))
		if err != nil {
			return err
		}
		for _, d := range l.Definitions {
			defs = append(defs, d.Digest)
		}
	}
	if err := r.Revoked.Check(res.Identity, res.BundleDigest, defs); err != nil {
		return &verify.StepError{Step: verify.StepIdentity, Err: err}
	}
	for _, rr := range results {
		for _, id := range []string{rr.Identity, rr.Subject, rr.SignerKeyID} {
			if err := r.Revoked.Check(id, "", nil); err != nil {
				return &verify.StepError{Step: verify.StepIdentity, Err: err}
			}
		}
	}
	if r.MaxBundleAge > 0 {
		if res.SigningTime.IsZero() {
			return &verify.StepError{Step: verify.StepTime, Err: fmt.Errorf("policy maxBundleAge %s: the bundle has no verified signing time (require a timestamp or a log entry)", r.MaxBundleAge)}
		}
		if age := time.Since(res.SigningTime); age > r.MaxBundleAge {
			return &verify.StepError{Step: verify.StepTime, Err: fmt.Errorf("policy maxBundleAge %s: the bundle was signed %s ago (%s)", r.MaxBundleAge, age.Round(time.Second), res.SigningTime.UTC().Format(time.RFC3339))}
		}
	}
	if r.Package != "" {
		found := false
		for _, c := range res.Claims {
			if strings.HasPrefix(c.Name, "package[") && strings.HasSuffix(c.Name, "].purl") && c.Value == r.Package {
				found = true
			}
		}
		if !found {
			return &verify.StepError{Step: verify.StepStatement, Err: fmt.Errorf("policy package %s: the statement binds no package of that purl", textsafe.Quote(r.Package))}
		}
	}
	return nil
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
	vs, err := policyVerifiers(cmd.Context(), f, r)
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
	tr, verr := verifyThreshold(cmd.Context(), r, vs, bundles, snap)
	res := tr.First
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
func writeThreshold(w io.Writer, r *policy.Resolved, tr *thresholdResult) {
	fmt.Fprintf(w, "\npolicy %s: %d of %d distinct identities required, %d signed\n", textsafe.Escape(r.Name), r.Threshold, len(r.Identities), tr.Matched)
	for _, s := range tr.Signers {
		var ids []string
		for _, i := range s.identities {
			ids = append(ids, fmt.Sprint(i))
		}
		fmt.Fprintf(w, "  signer %s %s (identities %s)\n", s.result.Method, textsafe.Quote(s.result.Identity), strings.Join(ids, ", "))
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
	vs, err := policyVerifiers(cmd.Context(), f, r)
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
	var tr *thresholdResult
	if verr == nil {
		tr, verr = verifyThreshold(cmd.Context(), r, vs, bundles, snap)
	}
	if verr != nil {
		var res *verify.Result
		if tr != nil {
			res = tr.First
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
	return writePinLock(cmd, a, asJSON, po, snap, pinbundle.ApprovalOf(tr.First), overrides)
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
		vs, err := policyVerifiers(cmd.Context(), f, r)
		if err != nil {
			return err
		}
		var inputs []*bundleInput
		if len(f.vo.Bundles) > 0 || r.Bundle.Kind != policy.BundleNone {
			if inputs, err = policyBundleInputs(a, f, r); err != nil {
				return err
			}
			vf = policyVerifyFunc(r, vs, inputs)
		}
	}
	if cfg.TOFU {
		fmt.Fprintf(a.stderr, "mcpsign: policy %s: \"unsigned\": \"tofu\": with no lock, the first definitions seen are pinned (no signature vouches for them)\n", textsafe.Quote(r.Name))
	}
	return startProxy(cmd, a, cfg, vf)
}
