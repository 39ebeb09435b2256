package proxycmd

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/auditevent"
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

// auditPolicy returns p, recording its verdicts in the audit log at path
// (docs/AUDIT.md): a lock written on first use is approved, a lock rolled
// forward (or adopted from another proxy) rolled-forward, a refusal
// blocked. A definitions match is not recorded. An audit log that cannot be
// written blocks the session: what is not recorded is not approved.
//
// mode is Config.Mode. Under warn and audit a refusal of definitions that
// differ from a lock in force (drift) is let through and recorded as
// warned; warn also reports it on stderr. Everything else (a first use that
// does not verify, a check that fails) blocks as under block.
func auditPolicy(p *proxy.LockPolicy, path, mode string, stderr io.Writer) proxy.Policy {
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
				fmt.Fprintf(stderr, "mcpsign proxy: WARNING: mode warn: drift relayed, not blocked: %s\n%s",
					textsafe.Escape(d.Summary), textsafe.EscapeKeepLayout(d.Report))
			}
			relayed := &proxy.Decision{Allow: true, Findings: d.Findings}
			if mode == ModeWarn {
				relayed.Summary = "mode warn: drift relayed (" + d.Summary + ")"
			}
			d = relayed
		case !d.Allow:
			e = auditevent.Refusal(audit.Blocked, before, snap, d.Findings)
		case d.Updated && before == nil:
			e = auditevent.Approval(audit.Approved, nil, after)
		case d.Updated:
			e = auditevent.Approval(audit.RolledForward, before, after)
		default:
			return d, nil
		}
		if path == "" {
			return d, nil
		}
		if aerr := audit.Append(ctx, path, e); aerr != nil {
			fmt.Fprintf(stderr, "mcpsign proxy: %s\n", textsafe.Escape("audit log: "+aerr.Error()))
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
