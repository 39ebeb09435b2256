// Package publisher is a release key for tests: it signs snapshots as a
// publisher does with the key method (docs/SIGNING.md) and gives the
// verifier that trusts it, for the signed first use and roll-forward tests
// of the proxy and the front (docs/LOCK.md). Test-only: every function
// fails the test it is given instead of returning an error.
package publisher

import (
	"context"
	"crypto"
	"os"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/verify"
)

// Publisher is a signing key and the verifier that trusts it.
type Publisher struct {
	Key      crypto.Signer
	Verifier *verify.Verifier
}

// New makes a publisher with a fresh ECDSA P-256 key.
func New(tb testing.TB) *Publisher {
	tb.Helper()
	key, err := sign.GenerateKey(sign.ECDSAP256)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := verify.New(verify.Trust{}, verify.Policy{Method: verify.MethodKey, PublicKey: key.Public()})
	if err != nil {
		tb.Fatal(err)
	}
	return &Publisher{Key: key, Verifier: v}
}

// Sign writes the bundle of snap's statement, signed with p's key, to path.
func (p *Publisher) Sign(tb testing.TB, snap *digest.Snapshot, path string) {
	tb.Helper()
	payload := Statement(tb, snap)
	signer, err := sign.NewKeySigner(p.Key)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := sign.Sign(context.Background(), payload, sign.Options{Signer: signer})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, res.Bundle, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Statement is the in-toto statement of snap (docs/ATTESTATION.md), as
// 'mcpsign sign' makes it without packages: the payload a bundle signs.
func Statement(tb testing.TB, snap *digest.Snapshot) []byte {
	tb.Helper()
	st, err := attest.Build(snap, attest.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := st.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return payload
}
