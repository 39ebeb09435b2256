package auditevent

import (
	"fmt"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// NoHeadError is a lock that records no audit head (auditHead): it was
// written without an audit log, or by an older mcpsign, so it anchors no
// log (docs/AUDIT.md "Anchors").
type NoHeadError struct{ Path string }

func (e *NoHeadError) Error() string {
	return fmt.Sprintf("the lock %s records no audit head (auditHead): it was written without an audit log, or by an older mcpsign; nothing anchors the log", e.Path)
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
	return audit.Anchor{Name: "the lock " + path, Head: l.AuditHead, LockDigest: l.LockDigest}, nil
}

// HeadError is a head given to Anchors that is not a digest (sha256: and
// 64 lowercase hex digits).
type HeadError struct{ Head string }

func (e *HeadError) Error() string {
	return fmt.Sprintf("%s: want sha256: and 64 lowercase hex digits", textsafe.RawQuote(e.Head))
}

// Anchors returns the anchors for audit.Check of the locks at the paths
// locks (LockAnchor), then of the heads kept elsewhere ("the expected
// head"), in that order; the first that cannot be one is the error (a
// *NoHeadError, a *HeadError, or the lock's read error).
func Anchors(locks, heads []string) ([]audit.Anchor, error) {
	var anchors []audit.Anchor
	for _, p := range locks {
		an, err := LockAnchor(p)
		if err != nil {
			return nil, err
		}
		anchors = append(anchors, an)
	}
	for _, h := range heads {
		if !digest.ValidDigest(h) {
			return nil, &HeadError{Head: h}
		}
		anchors = append(anchors, audit.Anchor{Name: "the expected head", Head: h})
	}
	return anchors, nil
}
