package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// VerifyFunc verifies the publisher's signature over observed definitions
// (a Sigstore bundle, under the caller's trust policy) and returns the
// approval to record in a lock. The CLI builds one from --bundle and the
// verify flags; it re-reads the bundle on every call, so that a host which
// updates a server and its bundle together gets the update approved.
type VerifyFunc func(ctx context.Context, snap *digest.Snapshot) (pin.Approval, error)

// LockOptions configure a [LockPolicy].
type LockOptions struct {
	// Verify, when set, approves definitions the lock does not hold: on
	// first use (no lock yet: signed first use) and when the server changed
	// (a signed update rolls the lock forward). Nil: nothing but the lock
	// (or TOFU) approves.
	Verify VerifyFunc
	// TOFU allows a first use without a signature: with no lock file, the
	// first definitions seen are written to it, recorded as method "tofu".
	// It never approves a change.
	TOFU bool
}

// ErrNoLock is the error of NewLockPolicy when there is no lock file and
// neither a verifier nor TOFU was given.
var ErrNoLock = errors.New("no lock file")

// LockPolicy is the [Policy] of a lock file (docs/LOCK.md): the definitions
// must match the lock under the drift rules of docs/DRIFT.md (any error
// finding refuses; notices such as a new server version pass).
//
// Changes are approved only by a signature: with a VerifyFunc, definitions
// the lock does not hold are verified, and if the signer is the one the lock
// recorded (same method, identity and issuer), the lock is rolled forward
// atomically under its file lock and the session goes on. A lock approved
// on first use (tofu) is never rolled forward. Before refusing, the lock is
// read again: another proxy on the same lock may have rolled it forward
// already.
type LockPolicy struct {
	path string
	opts LockOptions

	mu  sync.Mutex
	cur *pin.Lock // nil before a first use
}

// NewLockPolicy reads the lock at path. An unreadable, malformed or modified
// lock is an error (a *pin.LockError naming the file; the file is left
// untouched). A missing lock is allowed with a VerifyFunc (signed first use)
// or TOFU; otherwise the error wraps ErrNoLock.
func NewLockPolicy(path string, opts LockOptions) (*LockPolicy, error) {
	p := &LockPolicy{path: path, opts: opts}
	l, err := pin.Read(path)
	switch {
	case err == nil:
		p.cur = l
	case errors.Is(err, fs.ErrNotExist) && (opts.Verify != nil || opts.TOFU):
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: give --bundle with the verify flags for a signed first use, or --tofu to trust the first definitions seen", ErrNoLock, path)
	default:
		return nil, err
	}
	return p, nil
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
		return &Decision{Allow: true, Summary: "definitions match the lock " + p.path + " (" + counts(snap) + ")"}, nil
	}

	// Another proxy on the same lock may have approved the change.
	if disk, err := pin.Read(p.path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return p.refuse(rep, "the lock can no longer be read: "+err.Error()), nil
		}
	} else if disk.LockDigest != p.cur.LockDigest {
		if r2 := disk.Check(snap); !r2.Failed(pin.FailOnDrift) {
			p.cur = disk
			return &Decision{Allow: true, Updated: true, Summary: "the lock " + p.path + " was updated by another process; the definitions match it"}, nil
		}
	}

	if p.opts.Verify == nil {
		return p.refuse(rep, "no --bundle was given: only a signed update can change the pinned definitions"), nil
	}
	if p.cur.Approval.Method == pin.MethodTOFU {
		return p.refuse(rep, "the lock was trusted on first use (tofu): no signer to accept an update from; re-pin with 'mcpsign pin'"), nil
	}
	appr, err := p.opts.Verify(ctx, snap)
	if err != nil {
		return p.refuse(rep, "the bundle does not approve the new definitions: "+err.Error()), nil
	}
	if why := sameSigner(p.cur.Approval, appr); why != "" {
		return p.refuse(rep, "the new definitions are signed by another signer: "+why), nil
	}
	next, err := pin.NewLock(snap, appr)
	if err != nil {
		return p.refuse(rep, "the new definitions cannot be pinned: "+err.Error()), nil
	}
	carryOverrides(next, p.cur)
	prev := p.cur
	var adopted *pin.Lock
	err = pin.Update(ctx, p.path, func(cur *pin.Lock) (*pin.Lock, error) {
		switch {
		case cur == nil:
			return nil, errors.New("the lock file disappeared")
		case cur.LockDigest == prev.LockDigest:
			return next, nil
		case !cur.Check(snap).Failed(pin.FailOnDrift):
			// Another proxy rolled it forward to the same definitions
			// meanwhile: keep its lock.
			adopted = cur
			return nil, nil
		}
		return nil, errors.New("the lock changed while the update was verified; not overwriting it")
	})
	if err != nil {
		return p.refuse(rep, "rolling the lock forward failed: "+err.Error()), nil
	}
	if adopted != nil {
		p.cur = adopted
		return &Decision{Allow: true, Updated: true, Summary: "the lock " + p.path + " was updated by another process; the definitions match it"}, nil
	}
	p.cur = next
	return &Decision{
		Allow:   true,
		Updated: true,
		Summary: fmt.Sprintf("signed update by %s: the lock %s was rolled forward (%s)", describeSigner(appr), p.path, counts(snap)),
		Report:  reportText(rep),
	}, nil
}

// firstUse writes the lock from the first definitions seen, verified (or
// trusted, with TOFU). It returns (nil, nil) when another process wrote the
// lock first: the definitions are then checked against that lock.
func (p *LockPolicy) firstUse(ctx context.Context, snap *digest.Snapshot) (*Decision, error) {
	appr := pin.Approval{Method: pin.MethodTOFU}
	how := "trusted on first use (tofu: nobody vouched for these definitions)"
	if p.opts.Verify != nil {
		var err error
		appr, err = p.opts.Verify(ctx, snap)
		if err != nil {
			return &Decision{
				Summary:  "first use: the bundle does not verify against the server's definitions",
				Report:   err.Error(),
				Findings: []string{"verify-failed"},
			}, nil
		}
		how = "signed first use: verified, signed by " + describeSigner(appr)
	}
	l, err := pin.NewLock(snap, appr)
	if err != nil {
		return &Decision{
			Summary:  "first use: the definitions cannot be pinned",
			Report:   err.Error(),
			Findings: []string{"invalid-definitions"},
		}, nil
	}
	if err := l.Create(ctx, p.path); err != nil {
		if !errors.Is(err, pin.ErrExists) {
			return nil, fmt.Errorf("writing the lock: %w", err)
		}
		winner, rerr := pin.Read(p.path)
		if rerr != nil {
			return nil, rerr
		}
		p.cur = winner
		return nil, nil
	}
	p.cur = l
	return &Decision{Allow: true, Updated: true, Summary: "wrote the lock " + p.path + ": " + how + " (" + counts(snap) + ")"}, nil
}

// refuse turns a failed report into a refusal.
func (p *LockPolicy) refuse(rep *pin.Report, why string) *Decision {
	d := &Decision{
		Summary: fmt.Sprintf("%d drift finding(s) against the lock %s", rep.Errors(), p.path),
		Report:  reportText(rep) + "\n" + why + "\n",
	}
	for _, f := range rep.Findings {
		if f.Severity != pin.SeverityError {
			continue
		}
		id := f.Rule
		if f.Kind != "" {
			id += " " + attest.SubjectName(f.Kind, f.Key)
		}
		d.Findings = append(d.Findings, id)
	}
	return d
}

func reportText(rep *pin.Report) string {
	var b bytes.Buffer
	if err := pin.WriteReportText(&b, rep); err != nil {
		return "(the report could not be written: " + err.Error() + ")"
	}
	return b.String()
}

// sameSigner says why a new approval is not by the signer the lock
// recorded, or "" when it is.
func sameSigner(locked, next pin.Approval) string {
	switch {
	case locked.Method != next.Method:
		return fmt.Sprintf("the lock was approved by %s signature, the update by %s", locked.Method, next.Method)
	case locked.Identity != next.Identity:
		return fmt.Sprintf("the lock was approved for %q, the update is signed by %q", locked.Identity, next.Identity)
	case locked.Issuer != next.Issuer:
		return fmt.Sprintf("the lock was approved for issuer %q, the update's issuer is %q", locked.Issuer, next.Issuer)
	}
	return ""
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

// carryOverrides keeps the capability overrides of tools whose definition
// did not change: an override approves a pinned definition only.
func carryOverrides(next, prev *pin.Lock) {
	if len(prev.Capabilities) == 0 {
		return
	}
	keep := pin.Overrides{}
	for name, caps := range prev.Capabilities {
		old, ok1 := prev.Lookup(digest.KindTool, name)
		cur, ok2 := next.Lookup(digest.KindTool, name)
		if ok1 && ok2 && old.Digest == cur.Digest {
			keep[name] = caps
		}
	}
	_ = next.SetCapabilities(keep) // every name is a tool of next
}

func counts(s *digest.Snapshot) string {
	parts := []string{
		plural(len(s.Tools), "tool"),
		plural(len(s.Prompts), "prompt"),
		plural(len(s.ResourceTemplates), "resource template"),
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprint(n) + " " + what + "s"
}
