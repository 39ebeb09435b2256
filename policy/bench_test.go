package policy_test

import (
	"context"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

// BenchmarkDecide is one decision on one key-signed bundle: with the
// entry prepared once (Entry.Decide), per entry (Decider.Decide: the
// verifiers built each time, the trust from the cache), and statements
// alone (no snapshot), against the verifier alone.
func BenchmarkDecide(b *testing.B) {
	dir := b.TempDir()
	k := newSigner(b, dir, "k")
	r := entry(b, dir, 1, "", k)
	snap := served()
	bundle := k.sign(b, snap)
	ctx := context.Background()
	d := policy.NewDecider(policy.DeciderOptions{})
	e, err := d.Prepare(ctx, r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("entry", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Decide(ctx, [][]byte{bundle}, snap); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decider", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Decide(ctx, r, [][]byte{bundle}, snap); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("statements", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Decide(ctx, [][]byte{bundle}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	v, err := verify.New(verify.Trust{}, verify.Policy{Method: verify.MethodKey, PublicKey: k.key.GetPublicKey()})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verifier", func(b *testing.B) {
		for b.Loop() {
			if _, err := v.Verify(ctx, bundle, snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}
