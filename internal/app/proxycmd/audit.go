package proxycmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

// Modes of Config.Mode (docs/POLICY.md "mode").
const (
	ModeBlock = "block"
	ModeWarn  = "warn"
	ModeAudit = "audit"
)

// lockRecorder records in the audit log the approval of every lock the
// proxy writes, before it is written and anchored in it
// (proxy.LockOptions.Record, auditevent.Approve), and remembers the last
// lock it recorded so that auditPolicy does not record it twice.
type lockRecorder struct {
	log string

	mu   sync.Mutex
	last *pin.Lock
}

// record is the proxy.LockOptions.Record of r; nil without a log.
func (r *lockRecorder) record() func(ctx context.Context, before, after *pin.Lock) error {
	if r.log == "" {
		return nil
	}
	return func(ctx context.Context, before, after *pin.Lock) error {
		kind := audit.RolledForward
		if before == nil {
			kind = audit.Approved
		}
		if err := auditevent.Approve(ctx, r.log, kind, before, after); err != nil {
			return fmt.Errorf("the audit log %s cannot be written, so nothing is approved: %w", r.log, err)
		}
		r.mu.Lock()
		r.last = after
		r.mu.Unlock()
		return nil
	}
}

// recorded reports whether l is the lock r recorded last.
func (r *lockRecorder) recorded(l *pin.Lock) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l != nil && l == r.last
}

// auditPolicy returns p, recording its verdicts in the audit log of rec
// (docs/AUDIT.md): a lock written on first use is approved and one rolled
// forward rolled-forward (both recorded by rec before the lock is written),
// a lock adopted from another proxy rolled-forward, a refusal blocked. A
// definitions match is not recorded. An audit log that cannot be written
// blocks the session: what is not recorded is not approved.
//
// mode is Config.Mode. Under warn and audit a refusal of definitions that
// differ from a lock in force (drift) is let through and recorded as
// warned; warn also reports it on stderr. Everything else (a first use that
// does not verify, a check that fails) blocks as under block.
func auditPolicy(p *proxy.LockPolicy, rec *lockRecorder, mode string, stderr io.Writer) proxy.Policy {
	path := rec.log
	if path == "" && (mode == "" || mode == ModeBlock) {
		return p
	}
	return proxy.PolicyFunc(func(ctx context.Context, snap *digest.Snapshot) (*proxy.Decision, error) {
		before := p.Lock()
		d, err := p.Check(ctx, snap)
		if err != nil || d == nil {
			return d, err
		}
		var e *audit.Event
		switch after := p.Lock(); {
		case !d.Allow && before != nil && (mode == ModeWarn || mode == ModeAudit) && !slices.Contains(d.Findings, pin.RulePolicyLockUnproven):
			// An unproven lock is no drift: it blocks in every mode.
			e = auditevent.Refusal(audit.Warned, before, snap, d.Findings)
			if mode == ModeWarn {
				fmt.Fprintf(stderr, "mcpsign proxy: WARNING: mode warn: drift relayed, not blocked: %s\n", textsafe.Escape(d.Summary))
				_ = d.WriteReport(stderr, "")
			}
			relayed := &proxy.Decision{Allow: true, Findings: d.Findings}
			if mode == ModeWarn {
				relayed.Summary = "mode warn: drift relayed (" + d.Summary + ")"
			}
			d = relayed
		case !d.Allow:
			e = auditevent.Refusal(audit.Blocked, before, snap, d.Findings)
		case d.Updated && rec.recorded(after):
			return d, nil // recorded before it was written
		case d.Updated && before == nil: // a first use without a log (mode warn)
			e = auditevent.Approval(audit.Approved, nil, after)
		case d.Updated: // an adoption of another proxy's lock
			e = auditevent.Approval(audit.RolledForward, before, after)
		default:
			return d, nil
		}
		if path == "" {
			return d, nil
		}
		if aerr := audit.Append(ctx, path, e); aerr != nil {
			fmt.Fprintf(stderr, "mcpsign proxy: %s\n", "audit log: "+textsafe.ShowError(aerr))
			if d.Allow {
				return &proxy.Decision{
					Summary:  "the audit log " + path + " cannot be written, so nothing is approved: " + aerr.Error(),
					Report:   "the audit log " + path + " cannot be written: " + aerr.Error() + "\n",
					Findings: []string{"audit-log-unwritable"},
				}, nil
			}
		}
		return d, nil
	})
}
