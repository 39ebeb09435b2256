package proxy

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
)

// TestAdmissionReverifyTlog: proving a lock at the first listing compares
// the transparency log entry it records with its bundle's too: a lock
// that records the right signer and bundle but a log entry of its own
// (an integrated time long ago, which the roll-forward rules would take as
// the lock's signing time) is not proven.
func TestAdmissionReverifyTlog(t *testing.T) {
	alice := publisher.New(t)
	snap := release(t, "notes 2.0.0")
	bundle := filepath.Join(t.TempDir(), "b.sigstore.json")
	alice.Sign(t, snap, bundle)
	forged := signedLock(t, alice, snap, bundle)
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	forged.Approval.Tlog = &evidence.Tlog{LogIndex: 1, LogID: "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d", IntegratedTime: &long}
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	writeLock(t, forged, lock)
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	p := lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle), Admission: &Admission{LockDigest: l.LockDigest, Reverify: true}})
	d, err := p.Check(testContext(t), snap)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allow || !slices.Equal(d.Findings, []string{pin.RulePolicyLockUnproven}) {
		t.Errorf("allow %v, findings %q: a lock recording another log entry was proven\n%s", d.Allow, d.Findings, d.Report)
	}
}
