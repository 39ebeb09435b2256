package pin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Rules of a change of approval: a signed roll-forward and a lock changed on
// disk by another process (docs/PROXY.md, "First use and updates"). They are
// errors: the change is refused and the lock in force stays.
const (
	// RuleLockChangedByAnotherProcess: the lock file no longer holds the
	// lock in force, and what it holds now is not an approval at least as
	// strong (same method and signer, a bundle that verifies under the
	// proxy's policy, and a roll-forward by the rules below).
	RuleLockChangedByAnotherProcess = "pin-lock-changed-by-another-process"
	// RuleRollForwardOtherSigner: the new definitions are signed by another
	// method or signer than the lock records.
	RuleRollForwardOtherSigner = "pin-rollforward-other-signer"
	// RuleRollForwardOtherServer: the signed statement is for a server of
	// another name than the lock's.
	RuleRollForwardOtherServer = "pin-rollforward-other-server"
	// RuleRollForwardOlderSignature: the new signature's verified time is
	// before the lock's evidence time.
	RuleRollForwardOlderSignature = "pin-rollforward-older-signature"
	// RuleRollForwardLowerVersion: the signed server version is a lower
	// semantic version than the lock's.
	RuleRollForwardLowerVersion = "pin-rollforward-lower-version"
	// RuleRollForwardResources: the new lock pins other static resources
	// than the lock in force. No signature covers resources (docs/LOCK.md,
	// "resources"): a signed update or a lock another process wrote never
	// changes them; a person does ('mcpsign approve', or pin again).
	RuleRollForwardResources = "pin-rollforward-resources-unsigned"
)

// SameResources returns an *ApprovalError (RuleRollForwardResources) when
// next does not approve exactly the static resources held approves (a lock
// without the member approves none: the same as an empty list). A
// roll-forward and the adoption of a lock another process wrote call it,
// since the signed approval they rest on says nothing about resources.
func SameResources(held, next *Lock) error {
	if resourceSet(held) == resourceSet(next) {
		return nil
	}
	what := func(l *Lock) string {
		if l.Resources == nil {
			return "no resources"
		}
		return digest.KindResource.Count(len(l.Resources)) + " (set " + l.ResourceSet + ")"
	}
	return &ApprovalError{Rule: RuleRollForwardResources, Reason: fmt.Sprintf(
		"the lock in force pins %s, the new one %s: resources are not signed, so a signature cannot approve a change of them; review it and approve it with 'mcpsign approve'",
		what(held), what(next))}
}

// CarryResources gives l, a new lock of a snapshot that did not list the
// static resources, the resources held pins: not listed is not judged, so
// an update keeps them as they were approved.
func (l *Lock) CarryResources(held *Lock) {
	if l.Resources == nil && held.Resources != nil {
		l.Resources, l.ResourceSet = slices.Clone(held.Resources), held.ResourceSet
	}
}

// resourceSet is the Set Digest of the resources l approves: none when it
// records none.
func resourceSet(l *Lock) string {
	if l.Resources == nil {
		return digest.EmptySetDigest
	}
	return l.ResourceSet
}

// Verified is what a verified bundle established about observed
// definitions: the approval to record in a lock, and the signed facts a
// roll-forward is judged by.
type Verified struct {
	// Approval is the evidence to record in the lock.
	Approval Approval `json:"approval"`
	// Server is the server name and version of the signed statement's
	// predicate (not the server's own serverInfo, which nobody signed).
	Server digest.ServerInfo `json:"server"`
	// SignedAt is the verified signing time: the earliest transparency log
	// integrated time or timestamp authority time that verified, in UTC.
	// Zero when the bundle has neither (a key signature checked at the
	// current time is not a verified time).
	SignedAt time.Time `json:"signedAt,omitzero"`
}

// ApprovalError is a refused change of approval. Rule is one of the
// RuleLockChangedByAnotherProcess and RuleRollForward* rules; Reason says
// why, for people (server text escaped).
type ApprovalError struct {
	Rule   string
	Reason string
}

func (e *ApprovalError) Error() string { return e.Rule + ": " + e.Reason }

// EvidenceTime is the verified time a lock's approval records: its
// transparency log entry's integrated time; zero when it has none (tofu, no
// log entry, or a log without integrated times such as Rekor v2).
func (l *Lock) EvidenceTime() time.Time {
	if t := l.Approval.Tlog; t != nil && t.IntegratedTime != nil && t.IntegratedTime.Unix() > 0 {
		return time.Unix(t.IntegratedTime.Unix(), 0).UTC()
	}
	return time.Time{}
}

// SameSigner returns a *ApprovalError (RuleRollForwardOtherSigner) when
// next is not by the signer held records: another method, identity or
// issuer; nil when it is the same signer.
func SameSigner(held, next Approval) error {
	why := ""
	switch {
	case held.Method != next.Method:
		why = fmt.Sprintf("the lock was approved by %s, the new approval is by %s", held.Method, next.Method)
	case held.Identity != next.Identity:
		why = fmt.Sprintf("the lock was approved for %s, the new approval is signed by %s", textsafe.RawQuote(held.Identity), textsafe.RawQuote(next.Identity))
	case held.Issuer != next.Issuer:
		why = fmt.Sprintf("the lock was approved for issuer %s, the new approval's issuer is %s", textsafe.RawQuote(held.Issuer), textsafe.RawQuote(next.Issuer))
	default:
		return nil
	}
	return &ApprovalError{Rule: RuleRollForwardOtherSigner, Reason: why}
}

// CheckRollForward applies the rules of a signed roll-forward from the lock
// held, whose verified time is heldTime (zero when unknown; see
// EvidenceTime), to the verified definitions next. It returns a
// *ApprovalError naming the first rule that refuses, or nil:
//
//   - next is by the signer the lock records (SameSigner);
//   - the signed server name equals the lock's server name;
//   - when both times are known, next was not signed before heldTime;
//   - when both versions are semantic versions (golang.org/x/mod/semver,
//     with or without a leading "v"), next's is not lower.
//
// Going back needs a person's approval, never a signature alone.
func CheckRollForward(held *Lock, heldTime time.Time, next *Verified) error {
	if err := SameSigner(held.Approval, next.Approval); err != nil {
		return err
	}
	if next.Server.Name != held.Server.Name {
		return &ApprovalError{Rule: RuleRollForwardOtherServer, Reason: fmt.Sprintf(
			"the lock is for the server %s, the bundle signs the server %s", textsafe.RawQuote(held.Server.Name), textsafe.RawQuote(next.Server.Name))}
	}
	if !heldTime.IsZero() && !next.SignedAt.IsZero() && next.SignedAt.Before(heldTime) {
		return &ApprovalError{Rule: RuleRollForwardOlderSignature, Reason: fmt.Sprintf(
			"the bundle was signed at %s, before the lock's evidence (%s): an older release does not replace a newer one",
			next.SignedAt.UTC().Format(time.RFC3339), heldTime.UTC().Format(time.RFC3339))}
	}
	if o, n := SemVer(held.Server.Version), SemVer(next.Server.Version); o != "" && n != "" && semver.Compare(n, o) < 0 {
		return &ApprovalError{Rule: RuleRollForwardLowerVersion, Reason: fmt.Sprintf(
			"the bundle signs version %s, lower than the lock's %s: a downgrade needs a person's approval",
			textsafe.RawQuote(next.Server.Version), textsafe.RawQuote(held.Server.Version))}
	}
	return nil
}

// SemVer returns v as a golang.org/x/mod/semver version ("v" prefixed), or
// "" when v, with or without one leading "v", is not one.
func SemVer(v string) string {
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return ""
	}
	return v
}
