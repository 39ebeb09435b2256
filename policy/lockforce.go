package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
)

// RuleRevoked is the finding of a lock whose approval rests on an item
// the policy revokes (docs/POLICY.md "revoked"): it blocks at start, under
// every --fail-on and mode.
const RuleRevoked = "policy-revoked"

var (
	// ErrNeedsServer is why a lock cannot be re-verified yet: a bundle is
	// the one the server advertises, read only with the server's
	// definitions (BundleFunc with a nil snapshot).
	ErrNeedsServer = pinbundle.ErrNeedsServer
	// ErrNoLockBundle: a signed lock must be re-verified, and neither the
	// host nor the policy names a bundle to verify it with.
	ErrNoLockBundle = errors.New("no bundle to verify it with: the policy names none")
	// ErrServedOther: the server serves other definitions than a lock that
	// only the server's bundle can prove.
	ErrServedOther = errors.New("the server serves other definitions than the lock, so its bundle cannot re-verify the lock")
)

// BundleFunc returns the bundles to decide on for snap, the definitions a
// server serves: nil before the server is read, when a bundle the server
// advertises is ErrNeedsServer. No bundle at all is (nil, nil).
type BundleFunc func(ctx context.Context, snap *digest.Snapshot) ([][]byte, error)

// OutsideError is a lock in force that the policy does not allow: Rule is
// RuleRevoked (Err a *RevokedError) or one of the RuleLock* findings (Err
// a *LockError).
type OutsideError struct {
	Rule string
	Err  error
}

func (e *OutsideError) Error() string {
	if e.Rule == RuleRevoked {
		return fmt.Sprintf("the lock rests on a %v: it approves nothing; verify a new bundle and pin again", e.Err)
	}
	var le *LockError
	if errors.As(e.Err, &le) && le.Rule == RuleLockUnproven {
		return le.Reason + ": the lock approves nothing under this policy until a bundle proves it"
	}
	if errors.As(e.Err, &le) {
		return le.Reason + ": the lock approves nothing under this policy; pin again under it"
	}
	return e.Err.Error()
}

func (e *OutsideError) Unwrap() error { return e.Err }

// Report is the drift report of the lock at path the policy does not
// allow: one error finding of the rule (docs/DRIFT.md).
func (e *OutsideError) Report(path string) *pin.Report {
	return &pin.Report{Lock: path, Counts: map[string]int{}, Findings: []pin.Finding{{
		Rule: e.Rule, Severity: pin.SeverityError, Message: e.Error(),
	}}}
}

// LockRevoked returns the revoked item l rests on (its approval's
// identity or bundle, or one of its definitions), nil if none.
func (r *Resolved) LockRevoked(l *pin.Lock) error {
	defs := make([]string, 0, len(l.Definitions))
	for _, d := range l.Definitions {
		defs = append(defs, d.Digest)
	}
	return r.Revoked.Check(l.Approval.Identity, l.Approval.BundleDigest, defs)
}

// Allows reports whether the policy lets a lock of the approval method m
// that is no signature (MethodTOFU, MethodManual) stand.
func (r *Resolved) Allows(m evidence.Method) bool {
	return r.CheckApproval(pin.Approval{Method: m}) == nil
}

// EnsureLockDir makes the directory of the entry's default lock (under the
// user state directory), private to the user; nothing for a lock the
// policy names.
func (r *Resolved) EnsureLockDir() error {
	if !r.DefaultLock {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.Lock), 0o700); err != nil {
		return fmt.Errorf("the lock directory of server %s: %w", textsafe.RawQuote(r.Name), err)
	}
	return nil
}

// LockCheck configures CheckLock.
type LockCheck struct {
	// Bundles gives the bundles that re-verify a signed lock (the lock's
	// own first); nil: none.
	Bundles BundleFunc
	// Hint, when set, rewrites why re-verifying failed before it is said
	// in the finding (a CLI adds the flags that fix it).
	Hint func(error) error
}

// LockStanding is what CheckLock established of a lock that may stand.
type LockStanding struct {
	// OverridesDropped says that the lock's capability overrides were
	// removed from it: no bundle signs them, and the server's user could
	// add some to a proven lock to hide what a changed tool gains.
	OverridesDropped bool
}

// CheckLock decides whether l, the lock at r's lock path, may be in force
// under r (docs/POLICY.md "The lock in force"): it rests on nothing
// revoked, and its approval satisfies the policy
// (Resolved.CheckApproval). A signed lock whose record names a listed
// signer is re-verified, whatever the record shows (a record is no proof:
// the server's user can write it): the bundles of opts must verify the
// lock's definitions under the policy, the first being the one the lock
// records. A proven signed lock's capability overrides are dropped from l
// (no bundle signs them). snap, when not nil, is what the server serves,
// and matches the lock; with none, a bundle the server advertises cannot
// be read, and the error is ErrNeedsServer. Anything else fails closed:
// the error is an *OutsideError naming the rule.
func (d *Decider) CheckLock(ctx context.Context, r *Resolved, l *pin.Lock, snap *digest.Snapshot, opts LockCheck) (LockStanding, error) {
	var st LockStanding
	if err := r.LockRevoked(l); err != nil {
		return st, &OutsideError{Rule: RuleRevoked, Err: err}
	}
	err := r.CheckApproval(l.Approval)
	if err == nil && l.Approval.Method.Valid() {
		// A record is no proof: a process that can write the lock (the
		// server, as the host's user) can record a listed signer over its
		// own definitions. A signed lock is in force only when its bundle
		// verifies it.
		err = &LockError{Rule: RuleLockUnproven, Reason: fmt.Sprintf("the lock records a signature by %s, and a record is no proof (anything that can write the lock can write it)", textsafe.RawQuote(string(l.Approval.Method)+" "+l.Approval.Identity))}
	}
	var le *LockError
	if !errors.As(err, &le) {
		return st, err
	}
	if le.Rule == RuleLockUnproven {
		rerr := d.reverifyLock(ctx, r, l, snap, opts.Bundles)
		if rerr == nil && len(l.Capabilities) > 0 && l.Approval.Method.Valid() {
			l.Capabilities = nil
			st.OverridesDropped = true
		}
		if rerr == nil || errors.Is(rerr, ErrNeedsServer) {
			return st, rerr
		}
		if opts.Hint != nil {
			rerr = opts.Hint(rerr)
		}
		le = &LockError{Rule: le.Rule, Reason: le.Reason + "; re-verifying the bundle it records: " + rerr.Error(), Err: rerr}
	}
	return st, &OutsideError{Rule: le.Rule, Err: le}
}

// CheckServedLock is CheckLock once the server was read, for a lock only
// the server's bundle can prove (CheckLock returned ErrNeedsServer):
// drifted says snap does not serve the lock's definitions
// (ErrServedOther). Every failure is an *OutsideError.
func (d *Decider) CheckServedLock(ctx context.Context, r *Resolved, l *pin.Lock, snap *digest.Snapshot, drifted bool, opts LockCheck) (LockStanding, error) {
	var st LockStanding
	err := ErrServedOther
	if !drifted {
		st, err = d.CheckLock(ctx, r, l, snap, opts)
	}
	if err == nil {
		return st, nil
	}
	var out *OutsideError
	if !errors.As(err, &out) {
		out = &OutsideError{Rule: RuleLockUnproven, Err: &LockError{Rule: RuleLockUnproven,
			Reason: "the lock records an approval the policy cannot take from the record alone: " + err.Error(), Err: err}}
	}
	return st, out
}

// reverifyLock verifies the bundles against the definitions the lock
// holds (snap's, which match them, when a bundle is the server's), under
// r, and checks that the first is the lock's approval. The bundles are
// those of get, the ones the host or the policy names, which decide
// alone (a lock of another release, with that release's bundle as its
// proof, does not stand against them); with none named, those the lock
// carries (its proof, docs/LOCK.md "proof"), verified as any other:
// whoever can write the lock can write them.
func (d *Decider) reverifyLock(ctx context.Context, r *Resolved, l *pin.Lock, snap *digest.Snapshot, get BundleFunc) error {
	switch {
	case get != nil:
		return d.reverifyWith(ctx, r, l, snap, get)
	case len(l.Proof) > 0:
		proof := func(context.Context, *digest.Snapshot) ([][]byte, error) { return l.Proof, nil }
		if err := d.reverifyWith(ctx, r, l, snap, proof); err != nil {
			return fmt.Errorf("the bundles the lock carries (its proof) do not prove it: %w", err)
		}
		return nil
	}
	return ErrNoLockBundle
}

// reverifyWith is reverifyLock with the bundles of get.
func (d *Decider) reverifyWith(ctx context.Context, r *Resolved, l *pin.Lock, snap *digest.Snapshot, get BundleFunc) error {
	e, err := d.Prepare(ctx, r)
	if err != nil {
		return err
	}
	defs := l.Snapshot()
	bundles, err := get(ctx, nil)
	if errors.Is(err, ErrNeedsServer) && snap != nil {
		bundles, err = get(ctx, snap)
		defs = snap
	}
	if err != nil {
		return err
	}
	if len(bundles) == 0 {
		return ErrNoLockBundle
	}
	dec, err := e.Decide(ctx, bundles, defs)
	if err != nil {
		return err
	}
	got, want := dec.Approval(), l.Approval
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

// VerifyFunc is the proxy's verification under the entry
// (proxy.VerifyFunc): the bundles of get, read anew for each listing,
// decided on (Entry.Decide), and the first bundle's evidence.
func (e *Entry) VerifyFunc(get BundleFunc) func(context.Context, *digest.Snapshot) (pin.Verified, error) {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		bundles, err := get(ctx, snap)
		if err != nil {
			return pin.Verified{}, err
		}
		dec, err := e.Decide(ctx, bundles, snap)
		if err != nil {
			return pin.Verified{}, err
		}
		return dec.Verified(), nil
	}
}
