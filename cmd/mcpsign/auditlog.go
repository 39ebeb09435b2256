package main

import (
	"context"
	"fmt"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/internal/auditevent"
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

// auditApproved appends the approval of after (replacing before) to the
// audit log at path, when one was given.
func auditApproved(ctx context.Context, path string, before, after *pin.Lock) error {
	if err := auditevent.Append(ctx, path, auditevent.Approval(audit.Approved, before, after)); err != nil {
		return fmt.Errorf("the lock was written, but not the audit log: %w", err)
	}
	return nil
}
