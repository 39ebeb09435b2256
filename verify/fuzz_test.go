package verify

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// FuzzVerifyBundle feeds bytes to the bundle parser, the statement parser
// and the whole verification with a fixed key. Whatever the input: no
// panic; every failure names its step; and a verification that passes
// verified exactly the payload the key signed (nothing else can pass).
func FuzzVerifyBundle(f *testing.F) {
	snap := exampleSnapshot()
	payload := statementOf(f, snap, attest.Options{})
	pb, pub := keySigned(f, payload, attest.PayloadType)
	good := marshalBundle(f, pb)
	v, err := New(Trust{}, Policy{Method: MethodKey, PublicKey: pub})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AAAA"}]}}`))
	if d := shareddata.Dir(); d != "" {
		for _, glob := range []string{"real-bundles/*.json", "sigstore-conformance/*/bundle.sigstore.json"} {
			files, _ := filepath.Glob(filepath.Join(d, glob))
			for _, p := range files {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
		}
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, chain := range []bool{false, true} {
			b, err := ParseBundle(data, chain)
			if err != nil {
				if step, ok := FailedStep(err); !ok || step != StepBundle {
					t.Fatalf("parse error without the bundle step: %v", err)
				}
				continue
			}
			if env := b.GetDsseEnvelope(); env != nil {
				if st, err := attest.Parse(env.GetPayload()); err == nil && len(st.Subject) == 0 {
					t.Fatal("statement without subjects accepted")
				}
			}
		}
		res, err := v.Verify(ctx, data, snap)
		if err != nil {
			if _, ok := FailedStep(err); !ok {
				t.Fatalf("failure without a step: %v", err)
			}
			if res != nil && res.Verified {
				t.Fatal("failed but Verified")
			}
			return
		}
		b, _ := ParseBundle(data, false)
		if !res.Verified || !bytes.Equal(b.GetDsseEnvelope().GetPayload(), payload) {
			t.Fatalf("verified a payload the key never signed")
		}
	})
}
