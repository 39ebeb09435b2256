package verify

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/trustroot"
)

// BenchmarkVerify measures one in-process verification of a public-good
// keyless bundle (model-transparency v1.0.0: no TSA; v1.1.0: with an RFC
// 3161 timestamp), one verifier reused, from the bundle's bytes:
//
//   - sigstore-go: sigstore-go's own parse and Verify, the plain production
//     trusted root, the policy its example verifier uses (the peer);
//   - mcpsign: VerifyBundle on the same root (every mcpsign check added);
//   - mcpsign+chaincache: VerifyBundle on trustroot.WithChainCache(root), as
//     the CLI runs it.
//
// docs/PERFORMANCE.md compares them, and with trustroot's BenchmarkFloor.
func BenchmarkVerify(b *testing.B) {
	tr := productionRoot(b)
	dg, _ := hex.DecodeString(modelSHA)
	ctx := context.Background()
	for _, c := range []struct{ name, file string }{
		{"v1.0.0-noTSA", "model-transparency-v1.0.0-sigstore.model.sig.json"},
		{"v1.1.0-TSA", "model-transparency-v1.1.0-sigstore.model.sig.json"},
	} {
		data := readShared(b, "real-bundles/"+c.file)
		b.Run(c.name+"/sigstore-go", func(b *testing.B) {
			sv, err := sgverify.NewVerifier(tr, sgverify.WithSignedCertificateTimestamps(1),
				sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1))
			if err != nil {
				b.Fatal(err)
			}
			id, err := sgverify.NewShortCertificateIdentity(ibmIssuer, "", ibmID, "")
			if err != nil {
				b.Fatal(err)
			}
			pol := sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", dg), sgverify.WithCertificateIdentity(id))
			b.ReportAllocs()
			for b.Loop() {
				var bun bundle.Bundle
				if err := bun.UnmarshalJSON(data); err != nil {
					b.Fatal(err)
				}
				if _, err := sv.Verify(&bun, pol); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, m := range []struct {
			name string
			tm   root.TrustedMaterial
		}{
			{"mcpsign", tr},
			{"mcpsign+chaincache", trustroot.WithChainCache(tr)},
		} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				v := mustVerifier(b, Trust{Sigstore: m.tm}, sigstorePolicy(ibmID, ibmIssuer))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.VerifyBundle(ctx, data, Artifact{Digest: dg}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVerifyStatement measures Verify of an mcpsign statement (the
// example server, definitions embedded) under the certificate method with a
// log entry and a timestamp: bundle, chain, log, time, identity, the strict
// statement parse and the match.
func BenchmarkVerifyStatement(b *testing.B) {
	f := newFixture(b)
	data := certSigned(b, f.pki, f.vs, f.payload, certOpts{tsa: true, tlog: true})
	v := f.certVerifier(b, Policy{RequireTlog: true, RequireTimestamp: true})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, data, f.snap); err != nil {
			b.Fatal(err)
		}
	}
}
