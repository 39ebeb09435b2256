package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/source"
)

var (
	// ErrNoBundle: neither the host nor the entry names a bundle to decide
	// on.
	ErrNoBundle = errors.New("the policy names no bundle")
	// ErrAuditNoLog: the entry's mode is audit, which records drift only
	// in the audit log, and the entry names no audit log.
	ErrAuditNoLog = errors.New(`mode audit records drift only in the audit log: add "audit" (its path) to the server or the defaults`)
)

// Gate is one server's policy decisions for a host (docs/POLICY.md "The
// decision from Go"): the decision on what the server serves, whether a
// lock may be in force, the proxy's verification, and how a proxy under
// the entry starts. The commands verify, pin, verify-pin and proxy decide
// through it.
type Gate struct {
	// Decider decides (one for every entry of a host); every method but
	// Locations needs it.
	Decider *Decider
	// Policy is the server's resolved entry.
	Policy *Resolved
	// Bundles are the bundles the host names (files or https URLs), in
	// order, in place of the entry's "bundle"; none: the entry's.
	Bundles []string
	// BundleOptions fetch bundle URLs and advertised bundles.
	BundleOptions source.BundleOptions
	// Hint, when set, rewrites the errors of preparing the entry, of
	// reading a bundle and of re-verifying a lock, and ErrNoBundle, before
	// they are returned or said (a CLI adds the flags that fix them).
	Hint func(error) error
	// OverridesDropped, when set, is called when CheckLock drops the
	// capability overrides of a lock it proved (LockStanding): a host says
	// that they are not applied.
	OverridesDropped func()
}

func (g *Gate) hint(err error) error {
	if err == nil || g.Hint == nil {
		return err
	}
	return g.Hint(err)
}

// Locations are where the bundles come from (Resolved.BundleLocations of
// the host's Bundles); none is an error wrapping ErrNoBundle.
func (g *Gate) Locations() (pinbundle.Locations, error) {
	locs := g.Policy.BundleLocations(g.Bundles, g.BundleOptions)
	if len(locs) == 0 {
		return nil, g.hint(fmt.Errorf("%w for server %s", ErrNoBundle, textsafe.RawQuote(g.Policy.Name)))
	}
	return locs, nil
}

// entry prepares the decision under the entry (Decider.Prepare).
func (g *Gate) entry(ctx context.Context) (*Entry, error) {
	e, err := g.Decider.Prepare(ctx, g.Policy)
	return e, g.hint(err)
}

// Served is what Gate.Decide found.
type Served struct {
	// Snapshot is what the server serves.
	Snapshot *digest.Snapshot
	// Decision is what verified; nil when the bundle the server
	// advertises was refused.
	Decision *Decision
	// Bundles are the bundles decided on, in order (Decision.Results[i]
	// is Bundles[i]'s): the proof a lock of the decision carries
	// (pin.Lock.SetProof).
	Bundles [][]byte
	// Err is why the decision does not hold: a *DecisionError (returned
	// with the Decision of what did verify) or the refusal of the bundle
	// the server advertises (a *verify.StepError); nil when it holds.
	Err error
}

// Decide decides on what the server serves: it prepares the entry, reads
// the bundles that come before the server (Locations.Early), reads the
// server with load, and the bundle it advertises when one is its
// (Locations.Served), then decides (Entry.Decide). An error is an input
// that could not be read, load's as it is; a decision that does not hold
// is Served.Err.
func (g *Gate) Decide(ctx context.Context, load func(context.Context) (*digest.Snapshot, error)) (*Served, error) {
	e, err := g.entry(ctx)
	if err != nil {
		return nil, err
	}
	locs, err := g.Locations()
	if err != nil {
		return nil, err
	}
	bundles, err := locs.Early(ctx)
	if err != nil {
		return nil, g.hint(err)
	}
	s := &Served{}
	if s.Snapshot, err = load(ctx); err != nil {
		return nil, err
	}
	if s.Err = locs.Served(ctx, bundles, s.Snapshot); s.Err != nil {
		return s, nil
	}
	s.Bundles = bundles
	s.Decision, s.Err = e.Decide(ctx, bundles, s.Snapshot)
	return s, nil
}

// CheckLock decides whether l, the lock at the entry's lock path, may be
// in force (Decider.CheckLock), a signed lock re-verified with the gate's
// bundles (the lock's own first). snap is what the server serves, nil
// before it is read; once it is (Decider.CheckServedLock), drifted says
// that snap does not serve l's definitions.
func (g *Gate) CheckLock(ctx context.Context, l *pin.Lock, snap *digest.Snapshot, drifted bool) (LockStanding, error) {
	opts := LockCheck{Hint: g.Hint}
	if locs := g.Policy.BundleLocations(g.Bundles, g.BundleOptions); len(locs) > 0 {
		opts.Bundles = pinbundle.Locations(locs).ForLock
	}
	var st LockStanding
	var err error
	if snap == nil {
		st, err = g.Decider.CheckLock(ctx, g.Policy, l, nil, opts)
	} else {
		st, err = g.Decider.CheckServedLock(ctx, g.Policy, l, snap, drifted, opts)
	}
	if st.OverridesDropped && g.OverridesDropped != nil {
		g.OverridesDropped()
	}
	return st, err
}

// VerifyFunc is the proxy's verification under the entry
// (Entry.VerifyFunc, a proxy.VerifyFunc), the bundles read anew for each
// listing (Locations.Fresh); nil, with no error, when neither the host nor
// the entry names a bundle.
func (g *Gate) VerifyFunc(ctx context.Context) (func(context.Context, *digest.Snapshot) (pin.Verified, error), error) {
	e, err := g.entry(ctx)
	if err != nil {
		return nil, err
	}
	locs := pinbundle.Locations(g.Policy.BundleLocations(g.Bundles, g.BundleOptions))
	if len(locs) == 0 {
		return nil, nil
	}
	return e.VerifyFunc(func(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
		bundles, err := locs.Fresh(ctx, snap)
		return bundles, g.hint(err)
	}), nil
}

// Admission is the part of the entry's rules for the lock in force that a
// proxy enforces from the lock alone, decided before it starts: the fields
// of proxy.Admission, which says what each means.
type Admission struct {
	LockDigest  string
	AllowTOFU   bool
	AllowManual bool
	Reverify    bool
}

// ProxyStart is how a proxy under the entry starts.
type ProxyStart struct {
	// Lock and AuditLog are the entry's lock and audit log ("" for none).
	Lock, AuditLog string
	// ManualRollForward is "rollForward": "manual".
	ManualRollForward bool
	// TOFU pins the first definitions seen when there is no lock: an
	// entry with no identity and "unsigned": "tofu".
	TOFU      bool
	Mode      Mode
	Resources Resources
	// Admission is what the proxy enforces of the lock in force.
	Admission Admission
}

// Proxy decides how a proxy under the entry starts: its lock, audit log,
// roll-forward rule, mode and resources, and first use on trust. The lock
// in force must satisfy the policy (CheckLock, docs/POLICY.md "The lock in
// force") or the proxy does not start: the error is an *OutsideError; a
// lock only the server's bundle can prove is re-verified at the first
// listing (Admission.Reverify), and the proxy enforces that very lock
// (Admission.LockDigest). No lock, or one that cannot be read, is a first
// use: the proxy refuses an unreadable one itself. An entry in mode audit
// without an audit log is an error wrapping ErrAuditNoLog.
func (g *Gate) Proxy(ctx context.Context) (*ProxyStart, error) {
	r := g.Policy
	st := &ProxyStart{
		Lock: r.Lock, AuditLog: r.Audit, ManualRollForward: r.RollForward == RollForwardManual,
		TOFU: len(r.Identities) == 0 && r.Unsigned == UnsignedTOFU, Mode: r.Mode, Resources: r.Resources,
		Admission: Admission{AllowTOFU: r.Allows(pin.MethodTOFU), AllowManual: r.Allows(pin.MethodManual)},
	}
	if r.Mode == ModeAudit && r.Audit == "" {
		return nil, fmt.Errorf("server %s: %w", textsafe.RawQuote(r.Name), ErrAuditNoLog)
	}
	l, err := pin.Read(r.Lock)
	if err != nil {
		return st, nil
	}
	switch _, err := g.CheckLock(ctx, l, nil, false); {
	case errors.Is(err, ErrNeedsServer):
		st.Admission.Reverify = true
	case err != nil:
		return st, err
	}
	st.Admission.LockDigest = l.LockDigest
	return st, nil
}

// Pinned is what Gate.CheckPinned found.
type Pinned struct {
	// Report is the drift report of what the server serves against the
	// lock (pin.Lock.Check), with the finding of a lock outside the policy
	// (OutsideError.Report); that finding alone when the lock was outside
	// it before the server was read (which it then was not).
	Report *pin.Report
	// Outside says the lock is outside the policy: the report fails
	// whatever the fail-on rule says.
	Outside bool
}

// CheckPinned checks what the server serves against l, the lock in force
// at path, under the entry (docs/POLICY.md "The lock in force"): l must
// stand under the policy before the server is read (CheckLock) and, when
// only the server's bundle can prove it, once it is. load reads the
// server; it is not called for a lock outside the policy at start.
func (g *Gate) CheckPinned(ctx context.Context, l *pin.Lock, path string, load func(context.Context) (*digest.Snapshot, error)) (*Pinned, error) {
	p := &Pinned{}
	var out *OutsideError
	_, err := g.CheckLock(ctx, l, nil, false)
	switch {
	case errors.As(err, &out):
		p.Report, p.Outside = out.Report(path), true
		return p, nil
	case err != nil && !errors.Is(err, ErrNeedsServer):
		return nil, err
	}
	snap, lerr := load(ctx)
	if lerr != nil {
		return nil, lerr
	}
	p.Report = l.Check(snap)
	p.Report.Lock = path
	if err != nil { // ErrNeedsServer: proven by the server's bundle, or not
		_, err = g.CheckLock(ctx, l, snap, p.Report.Failed(pin.FailOnDrift))
		if errors.As(err, &out) {
			p.Report.Findings = append(p.Report.Findings, out.Report(path).Findings...)
			p.Outside = true
		}
	}
	return p, nil
}
