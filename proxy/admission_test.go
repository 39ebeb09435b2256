package proxy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
)

// TestAdmissionAtStart: under a policy the proxy enforces only the lock
// mcpsign checked against it; one written between the check and the
// proxy's read is refused, naming the rule, and left as it is.
func TestAdmissionAtStart(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	// Locks as read back, with their lockDigest.
	reread := func(name string) *pin.Lock {
		l, err := pin.NewLock(release(t, name), pin.Approval{Method: pin.MethodTOFU})
		if err != nil {
			t.Fatal(err)
		}
		writeLock(t, l, lock)
		if l, err = pin.Read(lock); err != nil {
			t.Fatal(err)
		}
		return l
	}
	checked, other := reread("notes 2.0.0"), reread("notes poisoned")
	for _, tc := range []struct {
		name string
		adm  *Admission
		disk *pin.Lock
		ok   bool
	}{
		{"the checked lock", &Admission{LockDigest: checked.LockDigest, AllowTOFU: true}, checked, true},
		{"another lock", &Admission{LockDigest: checked.LockDigest, AllowTOFU: true}, other, false},
		{"a lock where there was none", &Admission{AllowTOFU: true}, checked, false},
		{"no policy", nil, other, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := writeLock(t, tc.disk, lock)
			p, err := NewLockPolicy(lock, LockOptions{TOFU: true, Admission: tc.adm})
			if tc.ok {
				if err != nil || p.Lock().LockDigest != tc.disk.LockDigest {
					t.Fatalf("NewLockPolicy: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLockNotChecked) || !bytes.Contains([]byte(err.Error()), []byte(pin.RuleLockChangedByAnotherProcess)) {
				t.Fatalf("NewLockPolicy: %v, want ErrLockNotChecked naming %s", err, pin.RuleLockChangedByAnotherProcess)
			}
			if after, _ := os.ReadFile(lock); !bytes.Equal(after, written) {
				t.Error("the lock file was changed")
			}
		})
	}
}

// TestAdmissionFirstUseRace: with no verifier (a policy's "unsigned":
// "tofu" server), the lock another process wrote during a first use stands
// only when the policy allows its method: a signed lock nothing here can
// verify is refused (policy-lock-signer-unlisted), a manual one only when
// allowed (policy-lock-method-refused).
func TestAdmissionFirstUseRace(t *testing.T) {
	alice := publisher.New(t)
	snap := release(t, "notes 2.0.0")
	tofu, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	manual, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodManual, Reason: "reviewed", Approver: "alice", PreviousLockDigest: "sha256:" + strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "b.sigstore.json")
	alice.Sign(t, snap, bundle)
	signed := signedLock(t, alice, snap, bundle)
	for _, tc := range []struct {
		name   string
		winner *pin.Lock
		adm    Admission
		rule   string // "" allowed
	}{
		{"tofu, allowed", tofu, Admission{AllowTOFU: true}, ""},
		{"manual, allowed", manual, Admission{AllowTOFU: true, AllowManual: true}, ""},
		{"manual, not allowed", manual, Admission{AllowTOFU: true}, pin.RulePolicyLockMethodRefused},
		{"signed, unverifiable", signed, Admission{AllowTOFU: true, AllowManual: true}, pin.RulePolicyLockSignerUnlisted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			lock := filepath.Join(t.TempDir(), "mcp.lock")
			adm := tc.adm
			p := lockPolicy(t, lock, LockOptions{TOFU: true, Admission: &adm})
			// The winner is written after the proxy found no lock, before
			// it writes its own.
			written := writeLock(t, tc.winner, lock)
			d, err := p.Check(ctx, snap)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow != (tc.rule == "") {
				t.Fatalf("allow %v: %s\n%s", d.Allow, d.Summary, d.Report)
			}
			if tc.rule != "" && !slices.Equal(d.Findings, []string{pin.RuleLockChangedByAnotherProcess, tc.rule}) {
				t.Errorf("findings %q, want %s", d.Findings, tc.rule)
			}
			if after, _ := os.ReadFile(lock); !bytes.Equal(after, written) {
				t.Error("the winner's lock was overwritten")
			}
		})
	}
}

// TestAdmissionReverify: a lock whose record alone cannot satisfy the
// policy, and that only the server's bundle can re-verify, is proven at the
// first listing that matches it: the VerifyFunc must verify it with the
// approval the lock records, or the session is refused
// (policy-lock-unproven); once proven it is not verified again.
func TestAdmissionReverify(t *testing.T) {
	alice, mallory := publisher.New(t), publisher.New(t)
	snap := release(t, "notes 2.0.0")
	dir := t.TempDir()
	bundle, other, malloryBundle := filepath.Join(dir, "b.sigstore.json"), filepath.Join(dir, "b2.sigstore.json"), filepath.Join(dir, "m.sigstore.json")
	alice.Sign(t, snap, bundle)
	alice.Sign(t, snap, other)
	mallory.Sign(t, snap, malloryBundle)
	held := signedLock(t, alice, snap, bundle)
	for _, tc := range []struct {
		name  string
		vf    VerifyFunc
		allow bool
	}{
		{"the recorded bundle verifies", pinbundle.Verifier(alice.Verifier, bundle), true},
		{"another bundle of the same signer", pinbundle.Verifier(alice.Verifier, other), false},
		{"another signer", pinbundle.Verifier(mallory.Verifier, malloryBundle), false},
		{"nothing verifies", pinbundle.Verifier(mallory.Verifier, bundle), false},
		{"no verifier", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			lock := filepath.Join(t.TempDir(), "mcp.lock")
			writeLock(t, held, lock)
			l, err := pin.Read(lock)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			var vf VerifyFunc
			if tc.vf != nil {
				vf = func(ctx context.Context, s *digest.Snapshot) (pin.Verified, error) {
					calls++
					return tc.vf(ctx, s)
				}
			}
			p := lockPolicy(t, lock, LockOptions{Verify: vf, Admission: &Admission{LockDigest: l.LockDigest, Reverify: true}})
			d, err := p.Check(ctx, snap)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow != tc.allow {
				t.Fatalf("allow %v: %s\n%s", d.Allow, d.Summary, d.Report)
			}
			if !tc.allow {
				if !slices.Equal(d.Findings, []string{pin.RulePolicyLockUnproven}) {
					t.Errorf("findings %q", d.Findings)
				}
				return
			}
			if d, err = p.Check(ctx, snap); err != nil || !d.Allow || calls != 1 {
				t.Errorf("second check: %v %+v, %d verifications, want 1", err, d, calls)
			}
		})
	}
}
