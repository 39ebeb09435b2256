package auditevent

import (
	"fmt"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// NoHeadError is a lock that records no audit head (auditHead): it was
// written without an audit log, or by an older mcpsign, so it anchors no
// log (docs/AUDIT.md "Anchors").
type NoHeadError struct{ Path string }

func (e *NoHeadError) Error() string {
	return fmt.Sprintf("the lock %s records no audit head (auditHead): it was written without an audit log, or by an older mcpsign; nothing anchors the log", textsafe.Escape(e.Path))
}

// LockAnchor returns the anchor of the lock at path for audit.Check: the
// log must reach the head the lock recorded, followed by the approval of
// that very lock, which no later approval replaced. A lock without a head
// is a *NoHeadError.
func LockAnchor(path string) (audit.Anchor, error) {
	l, err := pin.Read(path)
	if err != nil {
		return audit.Anchor{}, err
	}
	if l.AuditHead == "" {
		return audit.Anchor{}, &NoHeadError{Path: path}
	}
	return audit.Anchor{Name: "the lock " + textsafe.Escape(path), Head: l.AuditHead, LockDigest: l.LockDigest}, nil
}
