package pin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/examplesnap"
)

func manualApproval() Approval {
	return Approval{Method: MethodManual, Reason: "reviewed PR 12", Approver: "alice",
		PreviousLockDigest: digest.InstructionsDigest("prev"), SourceRevision: "abc123",
		ApprovedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func TestManualLock(t *testing.T) {
	l, err := NewLock(examplesnap.Live(t, "honest"), manualApproval())
	if err != nil {
		t.Fatal(err)
	}
	data := mustMarshal(t, l)
	if !bytes.Contains(data, []byte(`"approvedAt":"2026-12-01T12:00:00Z","reason":"reviewed PR 12","approver":"alice","previousLockDigest":"sha256:`)) {
		t.Fatalf("manual approval written as %s", data)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Approval != l.Approval {
		t.Fatalf("round trip: %+v, want %+v", back.Approval, l.Approval)
	}

	// Refused approvals and lock texts.
	snap := examplesnap.Live(t, "honest")
	for _, tc := range []struct {
		name string
		mod  func(*Approval)
		want string
	}{
		{"no reason", func(a *Approval) { a.Reason = "" }, "reason and approver"},
		{"no approver", func(a *Approval) { a.Approver = "" }, "reason and approver"},
		{"no previous lock", func(a *Approval) { a.PreviousLockDigest = "" }, "previousLockDigest"},
		{"with a signer", func(a *Approval) { a.Identity = "x" }, "manual approval has no identity"},
		{"reason on tofu", func(a *Approval) {
			a.Method = MethodTOFU
			a.PreviousLockDigest, a.Approver, a.SourceRevision = "", "", ""
		}, "manual approvals only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := manualApproval()
			tc.mod(&a)
			if _, err := NewLock(snap, a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLock = %v, want %q", err, tc.want)
			}
		})
	}
	// An empty optional member (rather than none) is refused, resealed.
	empty := reseal(t, bytes.Replace(data, []byte(`"sourceRevision":"abc123"`), []byte(`"sourceRevision":""`), 1))
	if _, err := Parse(empty); err == nil || !strings.Contains(err.Error(), "sourceRevision is empty") {
		t.Fatalf("Parse(empty sourceRevision) = %v", err)
	}
	if !validApprovalMethod(MethodManual) || !validApprovalMethod(MethodTOFU) || !validApprovalMethod(evidence.MethodKey) || validApprovalMethod("signed") ||
		MethodManual.Valid() || MethodTOFU.Valid() || !evidence.MethodKey.Valid() {
		t.Fatal("validApprovalMethod / Method.Valid (signed)")
	}
}

// TestNewChangeResources: the pinned resource set is the lock's when it
// pins resources, the empty set's otherwise; a snapshot that did not list
// them keeps the lock's stand.
func TestNewChangeResources(t *testing.T) {
	with := resourceLock(t, resourceSnap(resA))
	without := resourceLock(t, resourceSnap())
	for _, tt := range []struct {
		name string
		held *Lock
		want string
	}{
		{"pinned", with, with.ResourceSet},
		{"not pinned", without, digest.EmptySetDigest},
	} {
		c, err := NewChange(tt.held, resourceSnap())
		if err != nil {
			t.Fatal(err)
		}
		if c.Pinned[digest.KindResource] != tt.want || c.Served[digest.KindResource] != tt.want {
			t.Errorf("%s: pinned %s, served %s; want %s", tt.name, c.Pinned[digest.KindResource], c.Served[digest.KindResource], tt.want)
		}
	}
}
