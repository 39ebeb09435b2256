package main

import (
	"context"
	"fmt"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/pin"
)

// existingLock is the lock at path before a write replaces it, nil when
// there is none or it cannot be read (the audit event's lockBefore). It is
// read only when there is an audit log (auditLog) to record it in.
func existingLock(auditLog, path string) *pin.Lock {
	if auditLog == "" {
		return nil
	}
	l, err := pin.Read(path)
	if err != nil {
		return nil
	}
	return l
}

// checkLockOutputs checks, before anything is read or written, that a
// command can write the lock at lock (replacing one there only with
// overwrite) and append to the audit log at auditLog (when given): a
// command writes both or neither (docs/AUDIT.md "Writing a lock").
func checkLockOutputs(lock string, overwrite bool, auditLog string) error {
	if err := atomicfile.Check(lock, atomicfile.Options{Overwrite: overwrite}); err != nil {
		return err
	}
	if auditLog == "" {
		return nil
	}
	if err := audit.CheckWritable(auditLog); err != nil {
		return fmt.Errorf("nothing written: the audit log cannot be written: %w", err)
	}
	return nil
}

// approvalRecord records a lock's approval in the audit log before the
// lock is written (auditevent.Approve), and says which of the two a
// failure left written.
type approvalRecord struct {
	log      string
	before   *pin.Lock
	recorded string // the lockDigest of the approval recorded, once it is
}

// record is a pin.WriteOptions.Before: it appends the approval of after to
// the log and anchors after in it; nil when there is no log.
func (r *approvalRecord) record(ctx context.Context) func(*pin.Lock) error {
	if r.log == "" {
		return nil
	}
	return func(after *pin.Lock) error {
		if err := auditevent.Approve(ctx, r.log, audit.Approved, r.before, after); err != nil {
			return fmt.Errorf("nothing written: the audit log cannot be written: %w", err)
		}
		r.recorded = after.LockDigest
		return nil
	}
}

// result is the error of the lock write err, saying so when the audit log
// already records an approval that the lock does not hold.
func (r *approvalRecord) result(err error) error {
	if err != nil && r.recorded != "" {
		return fmt.Errorf("the audit log %s records the approval of the lock %s, but the lock was not written (audit verify --lock finds it): %w", r.log, r.recorded, err)
	}
	return err
}
