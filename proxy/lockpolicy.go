package proxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// VerifyFunc verifies the publisher's signature over observed definitions
// (a Sigstore bundle, under the caller's trust policy) and returns what the
// verification established: the approval to record in a lock, the server
// name and version of the signed statement (required), and the verified
// signing time (zero when there is none). The CLI builds one from --bundle
// and the verify flags; it re-reads the bundle on every call, so that a host
// which updates a server and its bundle together gets the update approved.
type VerifyFunc func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error)

// LockOptions configure a [LockPolicy].
type LockOptions struct {
	// Verify, when set, approves definitions the lock does not hold: on
	// first use (no lock yet: signed first use) and when the server changed
	// (a signed update rolls the lock forward), and re-verifies a lock
	// another process wrote before it is adopted. Nil: nothing but the lock
	// (or TOFU) approves.
	Verify VerifyFunc
	// TOFU allows a first use without a signature: with no lock file, the
	// first definitions seen are written to it, recorded as method "tofu".
	// It never approves a change.
	TOFU bool
	// ManualRollForward makes every change wait for a person: a signed
	// update is refused like any drift, to be reviewed and approved with
	// 'mcpsign approve' (policy rollForward "manual"). First use is not
	// affected.
	ManualRollForward bool
	// Record, when set, is called under the lock file's lock just before
	// the policy writes a lock (a first use: before is nil; a roll-forward:
	// before is the lock in force), with the lock about to be written; it
	// may set after's AuditHead. An error leaves the file as it is and the
	// definitions unapproved. The proxy records the approval in the audit
	// log here, before the lock is written (docs/AUDIT.md "Writing a
	// lock").
	Record func(ctx context.Context, before, after *pin.Lock) error
	// Admission, when set, is what the host's policy allows of a lock the
	// proxy does not verify itself (docs/POLICY.md "The lock in force").
	// Nil: no policy, any lock that reads is in force.
	Admission *Admission
}

// record is the pin.WriteOptions.Before of a lock write replacing before.
func (p *LockPolicy) record(ctx context.Context, before *pin.Lock) func(*pin.Lock) error {
	if p.opts.Record == nil {
		return nil
	}
	return func(after *pin.Lock) error { return p.opts.Record(ctx, before, after) }
}

// Admission is the part of a policy's rules for the lock in force that the
// proxy enforces from the lock alone (it links no verifier): mcpsign checks
// the lock against the whole policy before the proxy starts and hands over
// what it decided. A lock the proxy's VerifyFunc re-verified (a signed
// first use, a roll-forward, an adoption) was verified under the policy
// already.
type Admission struct {
	// LockDigest is the lockDigest of the lock mcpsign found to satisfy the
	// policy ("" when there was no lock): the proxy starts only on that
	// lock, so that a lock written between the check and the proxy's read
	// is not enforced unchecked.
	LockDigest string `json:"lockDigest,omitempty"`
	// AllowTOFU and AllowManual say whether the policy allows a tofu or a
	// manual lock that another process wrote on first use (a signed one
	// must be re-verified: with no VerifyFunc it is refused).
	AllowTOFU   bool `json:"allowTofu,omitempty"`
	AllowManual bool `json:"allowManual,omitempty"`
	// Reverify says that the lock is signed and only the server's own
	// bundle can prove it (a record is no proof: the server's user can
	// write the lock): the
	// first listing that matches the lock must be verified by the
	// VerifyFunc, with the very approval the lock records (method,
	// signer, bundle digest, log entry), or the session is blocked
	// (policy-lock-unproven), in every mode.
	Reverify bool `json:"reverify,omitempty"`
}

// ErrLockNotChecked is the error of NewLockPolicy when the lock is not the
// one its Admission was decided for.
var ErrLockNotChecked = errors.New("the lock is not the one checked against the policy")

// unverified returns the rule and the reason why the policy does not allow
// l, a lock another process wrote that no verification vouches for; ""
// when it allows it.
func (a *Admission) unverified(l *pin.Lock) (rule, why string) {
	switch m := l.Approval.Method; {
	case m == pin.MethodTOFU && !a.AllowTOFU, m == pin.MethodManual && !a.AllowManual:
		return pin.RulePolicyLockMethodRefused, fmt.Sprintf("it is approved by %s, a method the policy does not allow", describeApproval(l.Approval))
	case m.Valid():
		return pin.RulePolicyLockSignerUnlisted, fmt.Sprintf("it is signed by %s, and no bundle was given to verify it under the policy", describeSigner(l.Approval))
	}
	return "", ""
}

// ErrNoLock is the error of NewLockPolicy when there is no lock file and
// neither a verifier nor TOFU was given.
var ErrNoLock = errors.New("no lock file")

// errLockChanged is why a roll-forward does not overwrite the lock file.
var errLockChanged = errors.New("the lock file changed while the update was verified; not overwriting it")

// LockPolicy is the [Policy] of a lock file (docs/LOCK.md): the definitions
// must match the lock under the drift rules of docs/DRIFT.md (any error
// finding refuses; notices such as a new server version pass).
//
// Changes are approved only by a signature (docs/PROXY.md): with a
// VerifyFunc, definitions the lock does not hold are verified, and if the
// signer is the one the lock recorded (same method, identity and issuer),
// the statement is for the lock's server, and it goes forward (not signed
// before the lock's evidence, not a lower version), the lock is rolled
// forward atomically under its file lock and the session goes on. A lock
// approved on first use (tofu) is never rolled forward.
//
// The lock file may change under a running proxy: another proxy on the same
// lock may have rolled it forward, but the server, running as the same user,
// can write it too. Before refusing, the lock is read again, and a changed
// one is adopted only when it is at least as strong as the lock in force:
// the same method and signer, a signed method (a tofu lock is never
// replaced from disk), definitions that match the server's, and an approval
// the VerifyFunc reproduces (same bundle digest and log entry, same signed
// server) that passes the roll-forward rules. Anything else refuses with
// the finding pin-lock-changed-by-another-process; the file is left as it
// is.
//
// Under a host's policy (LockOptions.Admission) the proxy starts only on
// the lock that was checked against the policy, proves at the first
// listing a lock only the server's bundle can re-verify, and lets a lock
// another process writes during a first use stand only with a method the
// policy allows (docs/POLICY.md "The lock in force").
type LockPolicy struct {
	path string
	opts LockOptions

	mu  sync.Mutex
	cur *pin.Lock // nil before a first use
	// unproven: cur is the lock found at start, whose approval must still
	// be re-verified (Admission.Reverify).
	unproven bool
	// curTime is the verified signing time of cur's approval: the one the
	// VerifyFunc reported when this policy verified it, else the lock's
	// own evidence (pin.Lock.EvidenceTime); zero when unknown.
	curTime time.Time
}

// NewLockPolicy reads the lock at path. An unreadable, malformed or modified
// lock is an error (a *pin.LockError naming the file; the file is left
// untouched). A missing lock is allowed with a VerifyFunc (signed first use)
// or TOFU; otherwise the error wraps ErrNoLock.
func NewLockPolicy(path string, opts LockOptions) (*LockPolicy, error) {
	p := &LockPolicy{path: path, opts: opts}
	l, err := pin.Read(path)
	switch {
	case err == nil && opts.Admission != nil && l.LockDigest != opts.Admission.LockDigest:
		return nil, fmt.Errorf("%w: %s was changed by another process after it was checked (%s): restart to check it again", ErrLockNotChecked, path, pin.RuleLockChangedByAnotherProcess)
	case err == nil:
		p.hold(l, time.Time{})
		p.unproven = opts.Admission != nil && opts.Admission.Reverify
	case errors.Is(err, fs.ErrNotExist) && (opts.Verify != nil || opts.TOFU):
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: nothing approves a first use (neither a verifier for a signed one nor trust on first use was given)", ErrNoLock, path)
	default:
		return nil, err
	}
	return p, nil
}

// hold makes l the lock in force; signedAt is its verified signing time
// when this policy verified it (zero: the lock's own evidence).
func (p *LockPolicy) hold(l *pin.Lock, signedAt time.Time) {
	p.cur = l
	p.curTime = signedAt
	if signedAt.IsZero() {
		p.curTime = l.EvidenceTime()
	}
}

// Lock returns the lock in force, nil before a first use.
func (p *LockPolicy) Lock() *pin.Lock {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Check implements [Policy].
func (p *LockPolicy) Check(ctx context.Context, snap *digest.Snapshot) (*Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		d, err := p.firstUse(ctx, snap)
		if d != nil || err != nil {
			return d, err
		}
	}
	rep := p.cur.Check(snap)
	rep.Lock = p.path
	if !rep.Failed(pin.FailOnDrift) {
		return p.matched(ctx, rep, snap), nil
	}
	return p.changed(ctx, rep, snap), nil
}

// matched is the decision on definitions that match the lock in force (a
// lock only the server's bundle proves is proven first).
func (p *LockPolicy) matched(ctx context.Context, rep *pin.Report, snap *digest.Snapshot) *Decision {
	if p.unproven {
		if d := p.prove(ctx, rep, snap); d != nil {
			return d
		}
	}
	d := &Decision{Allow: true, Summary: "definitions match the lock " + p.path + " (" + snap.CountText() + ")"}
	if rep.Has(pin.RuleClientCapabilitiesDiffer) {
		// Not drift, but worth a person's eyes: the client announces
		// other capabilities than the lock was written under, and some
		// locked definitions may be absent for it.
		d.Summary = "definitions match the lock " + p.path + " for this client's capabilities, which differ from the lock's (" + snap.CountText() + ")"
		d.Drift = rep
	}
	return d
}

// changed is the decision on definitions that drift from the lock in
// force: a lock another process wrote may be adopted, a signed update
// rolls the lock forward; anything else is refused.
func (p *LockPolicy) changed(ctx context.Context, rep *pin.Report, snap *digest.Snapshot) *Decision {
	// The lock on disk: another proxy may have approved the change, or
	// another process may have written anything at all.
	disk, err := pin.Read(p.path)
	if err != nil {
		return p.refuseChanged(rep, "it can no longer be read: "+err.Error())
	}
	if disk.LockDigest != p.cur.LockDigest {
		return p.adopt(ctx, rep, disk, snap)
	}

	if p.opts.ManualRollForward {
		return p.refuse(rep, "roll-forward is manual: a change waits for a person's review, signed or not; approve it with 'mcpsign approve' and restart the proxy")
	}
	if p.opts.Verify == nil {
		return p.refuse(rep, "no bundle was given to verify with: only a signed update can change the pinned definitions")
	}
	switch p.cur.Approval.Method {
	case pin.MethodTOFU:
		return p.refuse(rep, "the lock was trusted on first use (tofu): no signer to accept an update from; re-pin with 'mcpsign pin'")
	case pin.MethodManual:
		return p.refuse(rep, "the lock was approved manually: no signer to accept an update from; review the change and approve it with 'mcpsign approve'")
	}
	v, err := p.verify(ctx, snap)
	if err != nil {
		return p.refuse(rep, "the bundle does not approve the new definitions: "+err.Error())
	}
	if err := pin.CheckRollForward(p.cur, p.curTime, &v); err != nil {
		what := "the signed update is refused"
		if ae := (*pin.ApprovalError)(nil); errors.As(err, &ae) && ae.Rule == pin.RuleRollForwardOtherSigner {
			what = "the new definitions are signed by another signer"
		}
		return p.refuseRule(rep, err, what)
	}
	return p.rollForward(ctx, rep, snap, &v)
}

// rollForward writes the lock of a verified signed update that passed the
// roll-forward rules, under the lock file's lock, unless the file changed
// meanwhile (another proxy's roll-forward to the same definitions with the
// same bundle is kept).
func (p *LockPolicy) rollForward(ctx context.Context, rep *pin.Report, snap *digest.Snapshot, v *pin.Verified) *Decision {
	next, err := p.newLock(snap, v)
	if err != nil {
		return p.refuse(rep, "the new definitions cannot be pinned: "+err.Error())
	}
	next.CarryResources(p.cur)
	if err := pin.SameResources(p.cur, next); err != nil {
		return p.refuseRule(rep, err, "the signed update changes the static resources, which no signature covers")
	}
	next.CarryOverrides(p.cur)
	prev := p.cur
	var adopted *pin.Lock
	err = pin.Update(ctx, p.path, func(cur *pin.Lock) (*pin.Lock, error) {
		switch {
		case cur == nil:
			return nil, fmt.Errorf("%w: it was removed", errLockChanged)
		case cur.LockDigest == prev.LockDigest:
			if record := p.record(ctx, prev); record != nil {
				if err := record(next); err != nil {
					return nil, err
				}
			}
			return next, nil
		case !cur.Check(snap).Failed(pin.FailOnDrift) && sameEvidence(cur, v) == "":
			// Another proxy rolled it forward meanwhile, with the bundle
			// just verified, to these definitions: keep its lock.
			adopted = cur
			return nil, nil
		}
		return nil, errLockChanged
	})
	var le *pin.LockError
	switch {
	case errors.Is(err, errLockChanged):
		return p.refuseChanged(rep, err.Error())
	case errors.As(err, &le):
		// It was readable a moment ago.
		return p.refuseChanged(rep, "it can no longer be read: "+err.Error())
	case err != nil:
		return p.refuse(rep, "rolling the lock forward failed: "+err.Error())
	case adopted != nil:
		p.hold(adopted, v.SignedAt)
		p.unproven = false
		return &Decision{Allow: true, Updated: true, Summary: "the lock " + p.path + " was rolled forward by another process with the same verified bundle; the definitions match it"}
	}
	p.hold(next, v.SignedAt)
	p.unproven = false
	return &Decision{
		Allow:   true,
		Updated: true,
		Summary: fmt.Sprintf("signed update by %s: the lock %s was rolled forward (%s)", describeSigner(v.Approval), p.path, snap.CountText()),
		Drift:   rep,
	}
}

// adopt decides about disk, a lock another process wrote in place of the
// one in force, when the definitions do not match the lock in force: it is
// adopted only when it is at least as strong (see LockPolicy); otherwise
// the refusal names pin-lock-changed-by-another-process and the file is
// left as it is.
func (p *LockPolicy) adopt(ctx context.Context, rep *pin.Report, disk *pin.Lock, snap *digest.Snapshot) *Decision {
	held := p.cur
	if err := pin.SameSigner(held.Approval, disk.Approval); err != nil {
		return p.refuseChanged(rep, fmt.Sprintf("it is approved by %s, the lock in force by %s: not the same signer", describeApproval(disk.Approval), describeApproval(held.Approval)))
	}
	if !held.Approval.Method.Valid() {
		// A manual approval names a person, but anything that can write
		// the file can write that name: it is never adopted from disk.
		return p.refuseChanged(rep, fmt.Sprintf("the lock in force is %s: nothing can vouch for a %s lock another process wrote (restart the proxy to enforce the lock on disk)", describeApproval(held.Approval), held.Approval.Method))
	}
	if r := disk.Check(snap); r.Failed(pin.FailOnDrift) {
		return p.refuseChanged(rep, fmt.Sprintf("it does not approve the server's definitions either (%d drift finding(s))", r.Errors()))
	}
	if p.opts.Verify == nil {
		return p.refuseChanged(rep, "no bundle was given to verify the approval it records")
	}
	v, err := p.verify(ctx, snap)
	if err != nil {
		return p.refuseChanged(rep, "the bundle does not verify its definitions under this proxy's policy: "+err.Error())
	}
	if why := sameEvidence(disk, &v); why != "" {
		return p.refuseChanged(rep, why)
	}
	if err := pin.CheckRollForward(held, p.curTime, &v); err != nil {
		d := p.refuseRule(rep, err, "the lock "+p.path+" was changed by another process to an approval that does not go forward from the lock in force; it is not adopted and the file is left as it is", pin.RuleLockChangedByAnotherProcess)
		d.Summary = changedSummary(p.path) + d.Summary
		return d
	}
	if err := pin.SameResources(held, disk); err != nil {
		d := p.refuseRule(rep, err, "the lock "+p.path+" was changed by another process to other static resources, which no signature covers; it is not adopted and the file is left as it is", pin.RuleLockChangedByAnotherProcess)
		d.Summary = changedSummary(p.path) + d.Summary
		return d
	}
	p.hold(disk, v.SignedAt)
	p.unproven = false
	return &Decision{
		Allow:   true,
		Updated: true,
		Summary: fmt.Sprintf("the lock %s was updated by another process; its approval by %s verified again, and the definitions match it (%s)", p.path, describeSigner(v.Approval), snap.CountText()),
	}
}

// prove re-verifies the lock in force, found at start, whose record alone
// cannot satisfy the policy (Admission.Reverify): the definitions match it
// (rep), and the VerifyFunc must verify them with the approval the lock
// records. It returns nil when it does, else the refusal
// (policy-lock-unproven).
func (p *LockPolicy) prove(ctx context.Context, rep *pin.Report, snap *digest.Snapshot) *Decision {
	why := ""
	if p.opts.Verify == nil {
		why = "no bundle was given to verify it with"
	} else if v, err := p.verify(ctx, snap); err != nil {
		why = "its bundle does not verify its definitions under the policy: " + err.Error()
	} else if err := pin.SameSigner(p.cur.Approval, v.Approval); err != nil {
		why = "the bundle verifies, but not as the lock records: " + err.Error()
	} else if v.Approval.BundleDigest != p.cur.Approval.BundleDigest {
		why = fmt.Sprintf("the bundle verifies, but it is %s and the lock records %s", v.Approval.BundleDigest, p.cur.Approval.BundleDigest)
	} else if a, b := p.cur.Approval.Tlog, v.Approval.Tlog; a != nil && (b == nil || !a.Equal(*b)) {
		// The roll-forward rules take the lock's signing time from it (a
		// lock that records none makes no claim).
		why = "the bundle verifies, but the transparency log entry the lock records is not the bundle's"
	} else {
		p.unproven = false
		if !v.SignedAt.IsZero() {
			p.curTime = v.SignedAt
		}
		return nil
	}
	return &Decision{
		Summary:  "the lock " + p.path + " records an approval the policy cannot take from the record alone, and it is not proven",
		Drift:    rep,
		Report:   "the lock " + p.path + " is not proven: " + why + " (" + pin.RulePolicyLockUnproven + ")\n",
		Findings: []string{pin.RulePolicyLockUnproven},
	}
}

// verify runs the VerifyFunc and checks that it said what was signed.
func (p *LockPolicy) verify(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
	v, err := p.opts.Verify(ctx, snap)
	if err != nil {
		return pin.Verified{}, err
	}
	if v.Server.Name == "" {
		return pin.Verified{}, errors.New("the verifier did not say which server the bundle signs")
	}
	if !v.Approval.Method.Valid() {
		return pin.Verified{}, fmt.Errorf("the verifier's approval is not signed: method %s", textsafe.RawQuote(string(v.Approval.Method)))
	}
	return v, nil
}

// newLock is the lock of snap approved by v. Its server is the signed one
// (the statement's), not the serverInfo nobody signed, so that the
// roll-forward rules compare signed names and versions.
func (p *LockPolicy) newLock(snap *digest.Snapshot, v *pin.Verified) (*pin.Lock, error) {
	l, err := pin.NewLock(snap, v.Approval)
	if err != nil {
		return nil, err
	}
	l.Server = v.Server
	return l, nil
}

// sameEvidence says why the approval recorded in l is not the one v
// established (method, signer, bundle digest, log entry, signed server), or
// "" when it is.
func sameEvidence(l *pin.Lock, v *pin.Verified) string {
	a, b := l.Approval, v.Approval
	switch {
	case a.Method != b.Method || a.Identity != b.Identity || a.Issuer != b.Issuer:
		return fmt.Sprintf("it records the signer %s, the bundle is signed by %s", describeSigner(a), describeSigner(b))
	case a.BundleDigest != b.BundleDigest:
		return fmt.Sprintf("it records the bundle %s, the bundle verified is %s", a.BundleDigest, b.BundleDigest)
	case (a.Tlog == nil) != (b.Tlog == nil) || (a.Tlog != nil && !a.Tlog.Equal(*b.Tlog)):
		return "the transparency log entry it records is not the bundle's"
	case l.Server != v.Server:
		return fmt.Sprintf("it records the server %s %s, the bundle signs %s %s", textsafe.RawQuote(l.Server.Name), textsafe.RawQuote(l.Server.Version), textsafe.RawQuote(v.Server.Name), textsafe.RawQuote(v.Server.Version))
	}
	return ""
}

// firstUse writes the lock from the first definitions seen, verified (or
// trusted, with TOFU). It returns (nil, nil) when another process wrote the
// lock first and it may stand: the definitions are then checked against
// that lock. With a VerifyFunc, that lock must record the very approval
// just verified; any other is refused (pin-lock-changed-by-another-process).
func (p *LockPolicy) firstUse(ctx context.Context, snap *digest.Snapshot) (*Decision, error) {
	var v *pin.Verified
	l, err := func() (*pin.Lock, error) {
		if p.opts.Verify == nil {
			return pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
		}
		got, err := p.verify(ctx, snap)
		if err != nil {
			return nil, &verifyError{err}
		}
		v = &got
		return p.newLock(snap, v)
	}()
	var ve *verifyError
	switch {
	case errors.As(err, &ve):
		return &Decision{
			Summary:  "first use: the bundle does not verify against the server's definitions",
			FirstUse: true,
			Report:   ve.err.Error(),
			Findings: []string{"verify-failed"},
		}, nil
	case err != nil:
		return &Decision{
			Summary:  "first use: the definitions cannot be pinned",
			FirstUse: true,
			Report:   err.Error(),
			Findings: []string{"invalid-definitions"},
		}, nil
	}
	how := "trusted on first use (tofu: nobody vouched for these definitions)"
	var signedAt time.Time
	if v != nil {
		how = "signed first use: verified, signed by " + describeSigner(v.Approval)
		signedAt = v.SignedAt
	}
	if err := l.WriteWith(ctx, p.path, pin.WriteOptions{Before: p.record(ctx, nil)}); err != nil {
		if !errors.Is(err, pin.ErrExists) {
			return nil, fmt.Errorf("writing the lock: %w", err)
		}
		winner, rerr := pin.Read(p.path)
		if rerr != nil {
			return nil, rerr
		}
		if adm := p.opts.Admission; v == nil && adm != nil {
			if rule, why := adm.unverified(winner); rule != "" {
				return &Decision{
					Summary:  "first use: the lock " + p.path + " was written by another process meanwhile, with an approval the policy does not allow; it is not adopted",
					Report:   "the lock " + p.path + " was changed by another process: " + why + " (" + rule + ")\nit is not adopted and the file is left as it is\n",
					Findings: []string{pin.RuleLockChangedByAnotherProcess, rule},
				}, nil
			}
		}
		if v != nil {
			if why := sameEvidence(winner, v); why != "" {
				return &Decision{
					Summary:  "first use: the lock " + p.path + " was written by another process meanwhile, with another approval; it is not adopted",
					Report:   "the lock " + p.path + " was changed by another process: " + why + "\nit is not adopted and the file is left as it is\n",
					Findings: []string{pin.RuleLockChangedByAnotherProcess},
				}, nil
			}
		}
		p.hold(winner, signedAt)
		return nil, nil
	}
	p.hold(l, signedAt)
	return &Decision{Allow: true, Updated: true, Summary: "wrote the lock " + p.path + ": " + how + " (" + snap.CountText() + ")"}, nil
}

// verifyError marks a failed verification in firstUse.
type verifyError struct{ err error }

func (e *verifyError) Error() string { return e.err.Error() }

// refuseChanged refuses a lock another process wrote (or removed, or made
// unreadable) in place of the lock in force: why says what is wrong with it.
func (p *LockPolicy) refuseChanged(rep *pin.Report, why string) *Decision {
	d := p.refuse(rep, "the lock "+p.path+" was changed by another process: "+why+"\nit is not adopted and the file is left as it is")
	d.Summary = changedSummary(p.path) + d.Summary
	d.Findings = append([]string{pin.RuleLockChangedByAnotherProcess}, d.Findings...)
	return d
}

func changedSummary(path string) string {
	return "the lock " + path + " was changed by another process and is not adopted; "
}

// refuseRule refuses for the *pin.ApprovalError err (a roll-forward rule),
// with more rules before it.
func (p *LockPolicy) refuseRule(rep *pin.Report, err error, what string, more ...string) *Decision {
	var ae *pin.ApprovalError
	if !errors.As(err, &ae) {
		return p.refuse(rep, what+": "+err.Error())
	}
	d := p.refuse(rep, what+": "+ae.Reason+" ("+ae.Rule+")")
	d.Findings = append(append(more, ae.Rule), d.Findings...)
	return d
}

// refuse turns a failed report into a refusal.
func (p *LockPolicy) refuse(rep *pin.Report, why string) *Decision {
	d := &Decision{
		Summary: fmt.Sprintf("%d drift finding(s) against the lock %s", rep.Errors(), p.path),
		Drift:   rep,
		Report:  why + "\n",
	}
	d.Findings = rep.FindingIDs()
	return d
}

// describeSigner names a signer for people; the text is escaped where it
// is shown.
func describeSigner(a pin.Approval) string {
	s := string(a.Method) + " \"" + a.Identity + "\""
	if a.Issuer != "" {
		s += " (issuer \"" + a.Issuer + "\")"
	}
	return s
}

// describeApproval is describeSigner, and says that nobody signed a tofu
// approval.
func describeApproval(a pin.Approval) string {
	if a.Method == pin.MethodTOFU {
		return "tofu (trusted on first use: nobody signed it)"
	}
	return describeSigner(a)
}
