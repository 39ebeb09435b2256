package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	sgca "github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/internal/testkit/virtualsigstore"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/policy"
)

func TestCheckLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := newSigner(t, dir, "a"), newSigner(t, dir, "b")
	snap := served()
	ba, bb := a.sign(t, snap), b.sign(t, snap)
	d := policy.NewDecider(policy.DeciderOptions{})
	r := entry(t, dir, 1, "", a)
	signed := func(t *testing.T, bundle []byte) *pin.Lock {
		dec, err := d.Decide(ctx, r, [][]byte{bundle}, snap)
		if err != nil {
			t.Fatal(err)
		}
		l, err := pin.NewLock(snap, dec.Approval())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tofu, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	give := func(bundles ...[]byte) policy.BundleFunc {
		return func(context.Context, *digest.Snapshot) ([][]byte, error) { return bundles, nil }
	}
	fromServer := func(_ context.Context, s *digest.Snapshot) ([][]byte, error) {
		if s == nil {
			return nil, policy.ErrNeedsServer
		}
		return [][]byte{ba}, nil
	}
	kidA := signed(t, ba).Approval.Identity
	// mk is an entry of its own directory, with the key files.
	mk := func(extra string, keys ...signer) *policy.Resolved {
		dir := t.TempDir()
		for _, k := range keys {
			data, _ := os.ReadFile(k.pem)
			os.WriteFile(filepath.Join(dir, filepath.Base(k.pem)), data, 0o644)
		}
		return entry(t, dir, 1, extra, keys...)
	}
	tests := []struct {
		name     string
		r        *policy.Resolved
		lock     *pin.Lock
		bundles  policy.BundleFunc
		wantRule string // "" for a lock that stands
		wantIs   error
		want     string
	}{
		{name: "proven", r: r, lock: signed(t, ba), bundles: give(ba)},
		{name: "tofu refused", r: r, lock: tofu, wantRule: policy.RuleLockMethodRefused},
		{name: "no bundle", r: r, lock: signed(t, ba), wantRule: policy.RuleLockUnproven, want: "re-verifying the bundle it records: no bundle"},
		{name: "another bundle", r: mk("", a, b), lock: signed(t, ba), bundles: give(bb), wantRule: policy.RuleLockUnproven, want: "is not the bundle"},
		// The same signer, the same definitions, another bundle: the
		// lock records the bundle that proved it, and only that one
		// proves it (a revoked bundle must not be replaced by a sibling).
		{name: "the same signer's other bundle", r: r, lock: signed(t, ba), bundles: give(a.sign(t, snap)), wantRule: policy.RuleLockUnproven, want: "is not the bundle"},
		{name: "the server's", r: r, lock: signed(t, ba), bundles: fromServer, wantIs: policy.ErrNeedsServer},
		{name: "revoked", r: mk(fmt.Sprintf(`,"revoked":{"identities":[%q]}`, kidA), a), lock: signed(t, ba), bundles: give(ba), wantRule: policy.RuleRevoked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := d.CheckLock(ctx, tt.r, tt.lock, nil, policy.LockCheck{Bundles: tt.bundles})
			var out *policy.OutsideError
			switch {
			case st.OverridesDropped:
				t.Fatalf("overrides dropped from a lock that has none (%v)", err)
			case tt.wantIs != nil:
				if !errors.Is(err, tt.wantIs) {
					t.Fatalf("error %v, want %v", err, tt.wantIs)
				}
			case tt.wantRule == "":
				if err != nil {
					t.Fatalf("CheckLock: %v", err)
				}
			case !errors.As(err, &out) || out.Rule != tt.wantRule:
				t.Fatalf("error %v, want the rule %s", err, tt.wantRule)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q, want %q in it", err, tt.want)
			}
		})
	}
	// A proven lock's capability overrides are not applied: no bundle signs them.
	l := signed(t, ba)
	if err := l.SetCapabilities(capability.Overrides{"search_notes": {capability.Read}}); err != nil {
		t.Fatal(err)
	}
	st, err := d.CheckLock(ctx, r, l, nil, policy.LockCheck{Bundles: give(ba)})
	if err != nil || !st.OverridesDropped || l.Capabilities != nil {
		t.Fatalf("overrides dropped %v, left %v, error %v", st.OverridesDropped, l.Capabilities, err)
	}
	// Once the server is read: a drifted server cannot prove its lock.
	if _, err := d.CheckServedLock(ctx, r, signed(t, ba), snap, true, policy.LockCheck{Bundles: fromServer}); !errors.Is(err, policy.ErrServedOther) {
		t.Fatalf("drifted: error %v, want ErrServedOther", err)
	}
	if _, err := d.CheckServedLock(ctx, r, signed(t, ba), snap, false, policy.LockCheck{Bundles: fromServer}); err != nil {
		t.Fatalf("served: %v", err)
	}
}

// TestOutsideErrorText: what a lock outside the policy says, per rule
// (the message of its drift finding).
func TestOutsideErrorText(t *testing.T) {
	t.Parallel()
	lockErr := func(rule string) error { return &policy.LockError{Rule: rule, Reason: "the reason"} }
	for _, c := range []struct {
		err  *policy.OutsideError
		want string
	}{
		{&policy.OutsideError{Rule: policy.RuleRevoked, Err: &policy.RevokedError{What: "bundle", Value: "sha256:ab"}},
			`the lock rests on a revoked bundle "sha256:ab" (policy "revoked"): it approves nothing; verify a new bundle and pin again`},
		{&policy.OutsideError{Rule: policy.RuleLockUnproven, Err: lockErr(policy.RuleLockUnproven)},
			"the reason: the lock approves nothing under this policy until a bundle proves it"},
		{&policy.OutsideError{Rule: policy.RuleLockSignerUnlisted, Err: lockErr(policy.RuleLockSignerUnlisted)},
			"the reason: the lock approves nothing under this policy; pin again under it"},
		{&policy.OutsideError{Rule: policy.RuleLockMethodRefused, Err: errors.New("other")}, "other"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.err.Rule, got, c.want)
		}
	}
}

// TestCheckLockLogEntry: a signed lock that records a transparency log
// entry stands only when the bundle that proves it holds that very entry
// (the proxy takes the signing time from it); a lock recording none holds
// no claim. The certificate method, a log of an in-process Sigstore.
func TestCheckLockLogEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	ca := testpki.New(t, testpki.Names{Organization: "Corp", Root: "Corp Root", Intermediate: "Corp Signing"})
	roots, inters := filepath.Join(dir, "roots.pem"), filepath.Join(dir, "intermediates.pem")
	os.WriteFile(roots, testpki.PEM(ca.Root), 0o644)
	os.WriteFile(inters, testpki.PEM(ca.Intermediate), 0o644)
	vs, err := sgca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	trusted := virtualsigstore.WriteTrustedRoot(t, vs, dir)
	one := newSigner(t, dir, "one")
	leaf := ca.Issue(t, one.key.GetPublicKey(), testpki.CodeSigningLeaf(t, "release", "Corp", "release@corp.example"))
	snap := served()
	// logged signs snap under leaf with a log entry of vs.
	logged := func(t *testing.T) []byte {
		payload := publisher.Statement(t, snap)
		pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, one.key, sgsign.BundleOptions{CertificateProvider: leafCert{leaf.Raw}})
		if err != nil {
			t.Fatal(err)
		}
		sig := pb.GetDsseEnvelope().GetSignatures()[0].GetSig()
		pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{virtualsigstore.RekorEntry(t, vs, leaf, attest.PayloadType, payload, sig)}
		b, err := protojson.Marshal(pb)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	body := `{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":"` + trusted + `","caRoots":"` + roots + `","caIntermediates":"` + inters + `"},` +
		`"servers":{"notes":{"identities":[{"method":"certificate","subject":"CN=release,O=Corp"}],"require":["tlog"],"lock":"n.lock"}}}`
	r := resolveNotes(t, filepath.Join(dir, "policy.json"), dir, body)
	d := policy.NewDecider(policy.DeciderOptions{})
	bundle := logged(t)
	dec, err := d.Decide(ctx, r, [][]byte{bundle}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Approval().Tlog == nil {
		t.Fatal("the approval records no log entry")
	}
	lock := func(edit func(*pin.Approval)) *pin.Lock {
		a := dec.Approval()
		edit(&a)
		l, err := pin.NewLock(snap, a)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		lock *pin.Lock
		want string // "": the lock stands
	}{
		{"the bundle's entry", lock(func(*pin.Approval) {}), ""},
		{"no entry recorded", lock(func(a *pin.Approval) { a.Tlog = nil }), ""},
		{"another entry", lock(func(a *pin.Approval) { e := *a.Tlog; e.LogIndex++; a.Tlog = &e }), "the transparency log entry the lock records is not the first bundle's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.CheckLock(ctx, r, c.lock, nil, policy.LockCheck{Bundles: func(context.Context, *digest.Snapshot) ([][]byte, error) { return [][]byte{bundle}, nil }})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("CheckLock: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
