package auditevent

import (
	"context"
	"errors"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// FindingExpectMismatch is the finding of a manual approval refused
// because the server does not serve what the reviewer saw, followed by the
// set (docs/AUDIT.md "findings"): "approve-expect-mismatch tools".
const FindingExpectMismatch = "approve-expect-mismatch"

// ReadLock reads the lock at path (pin.Read); one that cannot be used is
// recorded as refused in the audit log at log (none when ""), with
// LockFinding's finding, and the error says both when the log cannot be
// written either.
func ReadLock(ctx context.Context, path, log string) (*pin.Lock, error) {
	l, err := pin.Read(path)
	if err != nil {
		if aerr := Append(ctx, log, Refusal(audit.LockRefused, nil, nil, []string{LockFinding(err)})); aerr != nil {
			return nil, errors.Join(err, aerr)
		}
		return nil, err
	}
	return l, nil
}

// RefuseStale records in the log at path (none when "") the refusal of a
// manual approval over held: the server served snap, which is not what
// the reviewer saw; stale are pin.Change.Stale's lines.
func RefuseStale(ctx context.Context, path string, held *pin.Lock, snap *digest.Snapshot, stale []string) error {
	findings := make([]string, len(stale))
	for i, s := range stale {
		findings[i] = FindingExpectMismatch + " " + pin.StaleSet(s)
	}
	return Append(ctx, path, Refusal(audit.LockRefused, held, snap, findings))
}

// ApproveManual replaces the lock at path, still held, by the manual
// approval a of snap (pin.ApproveManual), recorded first in the audit log
// at log (none when ""). The new lock is nil when none could be made; a
// lock that changed since it was read is pin.ErrLockChanged, and a failure
// after the log recorded the approval says so (Recorder.Result).
func ApproveManual(ctx context.Context, path, log string, held *pin.Lock, snap *digest.Snapshot, a pin.Approval) (*pin.Lock, error) {
	rec := &Recorder{Log: log, Before: held}
	next, err := pin.ApproveManual(ctx, path, held, snap, a, rec.Record(ctx))
	return next, rec.Result(err)
}
