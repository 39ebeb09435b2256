// Package auditevent builds the events of the audit log (docs/AUDIT.md)
// from locks, snapshots and drift reports, for the commands and the proxy
// that write one (package audit knows nothing of locks).
package auditevent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// OfSnapshot returns the Set Digests and the Instructions Digest of what a
// server served; nil sets when a definition has no digest.
func OfSnapshot(s *digest.Snapshot) (*audit.Sets, string) {
	if s == nil {
		return nil, ""
	}
	ins := ""
	if s.Instructions != nil {
		ins = digest.InstructionsDigest(*s.Instructions)
	}
	r := digest.Compute(s)
	if r.Err() != nil {
		return nil, ins
	}
	return &audit.Sets{Tools: r.Sets[digest.KindTool], Prompts: r.Sets[digest.KindPrompt], ResourceTemplates: r.Sets[digest.KindResourceTemplate]}, ins
}

// OfLock returns the Set Digests and the Instructions Digest a lock
// approves.
func OfLock(l *pin.Lock) (*audit.Sets, string) {
	ins := ""
	if l.Instructions != nil {
		ins = digest.InstructionsDigest(*l.Instructions)
	}
	return &audit.Sets{Tools: l.Sets.Tools, Prompts: l.Sets.Prompts, ResourceTemplates: l.Sets.ResourceTemplates}, ins
}

// Evidence is the audit evidence of a lock's approval.
func Evidence(a pin.Approval) *audit.Evidence {
	e := &audit.Evidence{
		Method: string(a.Method), Identity: a.Identity, Issuer: a.Issuer, BundleDigest: a.BundleDigest,
		Approver: a.Approver, Reason: a.Reason, SourceRevision: a.SourceRevision, PreviousLockDigest: a.PreviousLockDigest,
	}
	if a.Tlog != nil {
		i := a.Tlog.LogIndex
		e.LogIndex = &i
	}
	return e
}

func digestOf(l *pin.Lock) string {
	if l == nil {
		return ""
	}
	return l.LockDigest
}

// Approval is the event (audit.Approved or audit.RolledForward) of the lock
// after replacing before (nil on a first use), with the changes from
// before (Changes).
func Approval(kind audit.Kind, before, after *pin.Lock) *audit.Event {
	sets, ins := OfLock(after)
	e := &audit.Event{
		Time: time.Now().UTC(), Event: kind, Server: after.Server,
		LockBefore: digestOf(before), LockAfter: after.LockDigest,
		Sets: sets, Instructions: ins, Evidence: Evidence(after.Approval),
	}
	if before != nil {
		e.Changes = Changes(before.Check(after.Snapshot()))
	}
	return e
}

// Changes lists what a report found changed, for the changes of an
// approval: every error finding (pin.Report.FindingIDs), a capability
// gained with the capabilities ("pin-capability-added tool/x: exec,
// delete"); nil when nothing.
func Changes(rep *pin.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity != pin.SeverityError {
			continue
		}
		one := &pin.Report{Findings: []pin.Finding{f}}
		id := one.FindingIDs()[0]
		if len(f.Capabilities) > 0 && (f.Rule == pin.RuleCapabilityAdded || f.Rule == pin.RuleAdded(digest.KindTool)) {
			caps := make([]string, len(f.Capabilities))
			for i, c := range f.Capabilities {
				caps[i] = string(c)
			}
			id += ": " + strings.Join(caps, ", ")
		}
		out = append(out, id)
	}
	return out
}

// Refusal is the event (audit.Blocked, audit.Warned, audit.LockRefused)
// of what a server served (snap, nil when it was not read) refused under
// lock (nil when there is none or it could not be read), with the findings
// that refused it (at least one; "unspecified" when none was given). The
// lock is the same before and after: a refusal changes none.
func Refusal(kind audit.Kind, lock *pin.Lock, snap *digest.Snapshot, findings []string) *audit.Event {
	sets, ins := OfSnapshot(snap)
	e := &audit.Event{Time: time.Now().UTC(), Event: kind, Sets: sets, Instructions: ins, Findings: findings,
		LockBefore: digestOf(lock), LockAfter: digestOf(lock)}
	switch {
	case snap != nil:
		e.Server = snap.Server
	case lock != nil:
		e.Server = lock.Server
	}
	if len(e.Findings) == 0 {
		e.Findings = []string{"unspecified"}
	}
	return e
}

// LockFinding is the finding of a lock that cannot be used: the rule
// pin-lock-modified (DRIFT.md) for a modified lock, lock-unreadable for any
// other error.
func LockFinding(err error) string {
	if errors.Is(err, pin.ErrModified) {
		return pin.RuleLockModified
	}
	return "lock-unreadable"
}

// Append appends e to the log at path; nothing when path is "".
func Append(ctx context.Context, path string, e *audit.Event) error {
	if path == "" {
		return nil
	}
	return audit.Append(ctx, path, e)
}

// Approve records in the log at path the approval (kind audit.Approved or
// audit.RolledForward) of after, replacing before (nil on a first use),
// and anchors after in it: under the log's file lock it reads the log's
// head, sets after.AuditHead to it, seals after (its LockDigest, the
// event's lockAfter) and appends the event, which follows that head
// (docs/AUDIT.md "Anchors"). Nothing when path is "".
//
// Call it just before writing after, under the lock's own file lock
// (pin.WriteOptions.Before, or the function of pin.Update): the event is
// on disk before the lock, so that a writer stopped between the two leaves
// an approval recorded and not given (which checking the log against the lock finds),
// never one given and not recorded.
func Approve(ctx context.Context, path string, kind audit.Kind, before, after *pin.Lock) error {
	if path == "" {
		return nil
	}
	return audit.AppendAt(ctx, path, func(head string) (*audit.Event, error) {
		after.AuditHead = head
		if _, err := after.Marshal(); err != nil {
			return nil, err
		}
		return Approval(kind, before, after), nil
	})
}
