package auditevent

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/pin"
)

// CheckLockOutputs checks, before anything is read or written, that a
// lock can be written at lock (replacing one there only with overwrite)
// and the audit log at log (when given) appended to: a command writes both
// or neither (docs/AUDIT.md "Writing a lock").
func CheckLockOutputs(lock string, overwrite bool, log string) error {
	if err := atomicfile.Check(lock, atomicfile.Options{Overwrite: overwrite}); err != nil {
		return err
	}
	if log == "" {
		return nil
	}
	if err := audit.CheckWritable(log); err != nil {
		return fmt.Errorf("nothing written: the audit log cannot be written: %w", err)
	}
	return nil
}

// WriteLock writes l to path (replacing a lock there only with overwrite)
// after recording its approval in the audit log at log (none when ""),
// replacing the lock there before (docs/AUDIT.md "Writing a lock"). A
// failure says which of the two it left written.
func WriteLock(ctx context.Context, path string, l *pin.Lock, overwrite bool, log string) error {
	rec := &Recorder{Log: log, Before: LockBefore(log, path)}
	return rec.Result(l.WriteWith(ctx, path, pin.WriteOptions{Overwrite: overwrite, Before: rec.Record(ctx)}))
}

// LockBefore is the lock at path before a write replaces it, the audit
// event's lockBefore: nil when there is none or it cannot be read. It is
// read only when there is an audit log (log) to record it in.
func LockBefore(log, path string) *pin.Lock {
	if log == "" {
		return nil
	}
	l, err := pin.Read(path)
	if err != nil {
		return nil
	}
	return l
}

// Recorder records a lock's approval in the audit log before the lock is
// written (Approve), and says which of the two a failure left written.
type Recorder struct {
	// Log is the audit log ("" for none); Before the lock replaced.
	Log    string
	Before *pin.Lock

	recorded string // the lockDigest of the approval recorded, once it is
}

// Record is a pin.WriteOptions.Before (or a step of pin.Update): it
// appends the approval of after to the log and anchors after in it; nil
// when there is no log.
func (r *Recorder) Record(ctx context.Context) func(*pin.Lock) error {
	if r.Log == "" {
		return nil
	}
	return func(after *pin.Lock) error {
		if err := Approve(ctx, r.Log, audit.Approved, r.Before, after); err != nil {
			return fmt.Errorf("nothing written: the audit log cannot be written: %w", err)
		}
		r.recorded = after.LockDigest
		return nil
	}
}

// Result is the error of the lock write err: an *UnwrittenLockError when
// the audit log already records an approval that the lock does not hold.
func (r *Recorder) Result(err error) error {
	if err != nil && r.recorded != "" {
		return &UnwrittenLockError{Log: r.Log, Lock: r.recorded, Err: err}
	}
	return err
}

// ErrUnwrittenLock is in the chain of an *UnwrittenLockError.
var ErrUnwrittenLock = errors.New("the lock was not written")

// UnwrittenLockError says that the audit log Log records the approval of the
// lock whose digest is Lock, but the lock write failed with Err: the log's
// last approval is not the lock on disk, which checking the log against the
// lock (docs/AUDIT.md) reports.
type UnwrittenLockError struct {
	Log, Lock string
	Err       error
}

func (e *UnwrittenLockError) Error() string {
	return fmt.Sprintf("the audit log %s records the approval of the lock %s, but %v: %v", e.Log, e.Lock, ErrUnwrittenLock, e.Err)
}

// Unwrap returns ErrUnwrittenLock and the write's error.
func (e *UnwrittenLockError) Unwrap() []error { return []error{ErrUnwrittenLock, e.Err} }
