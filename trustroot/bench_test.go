package trustroot

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"testing"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// BenchmarkVerify measures one in-process verification of a public-good
// keyless bundle with one verifier reused, against the production trusted
// root: "sigstore-go" is sigstore-go's own Verify on the plain trusted root,
// "chaincache" the same Verify on WithChainCache(trusted root). The bundle
// is parsed once; "parse+chaincache" parses it on every iteration too.
// Compare with BenchmarkFloor (docs/PERFORMANCE.md).
func BenchmarkVerify(b *testing.B) {
	tr := productionRoot(b)
	for _, c := range realCases {
		bun := loadBundle(b, c.bundle)
		policy := realPolicy(b, realIdentity, realIssuer, realDigest)
		for _, m := range []struct {
			name string
			tm   root.TrustedMaterial
		}{
			{"sigstore-go", tr},
			{"chaincache", WithChainCache(tr)},
		} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				v := publicGoodVerifier(b, m.tm)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.Verify(bun, policy); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(c.name+"/parse+chaincache", func(b *testing.B) {
			raw, err := bun.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			v := publicGoodVerifier(b, WithChainCache(tr))
			b.ReportAllocs()
			for b.Loop() {
				fresh := new(bundle.Bundle)
				if err := fresh.UnmarshalJSON(raw); err != nil {
					b.Fatal(err)
				}
				if _, err := v.Verify(fresh, policy); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// floorFunc returns, for one real case, a function doing the per-bundle
// floor work of BenchmarkFloor once.
func floorFunc(b *testing.B, tr *root.TrustedRoot, c realCase) func() {
	var inter *x509.Certificate
	for _, ca := range tr.FulcioCertificateAuthorities() {
		if f := ca.(*root.FulcioCertificateAuthority); len(f.Intermediates) > 0 {
			inter = f.Intermediates[0]
		}
	}
	bun := loadBundle(b, c.bundle)
	vc, err := bun.VerificationContent()
	if err != nil {
		b.Fatal(err)
	}
	leaf := vc.Certificate()
	env := bun.GetDsseEnvelope()
	sum := sha256.Sum256(dsse.PAE(env.GetPayloadType(), env.GetPayload()))
	sig := env.GetSignatures()[0].GetSig()
	key := leaf.PublicKey.(*ecdsa.PublicKey)
	var tsr []byte
	if ts := bun.GetVerificationMaterial().GetTimestampVerificationData().GetRfc3161Timestamps(); len(ts) > 0 {
		tsr = ts[0].GetSignedTimestamp()
	}
	if c.tsa != (tsr != nil) {
		b.Fatalf("%s: timestamp presence mismatch", c.name)
	}
	return func() {
		if err := leaf.CheckSignatureFrom(inter); err != nil {
			b.Fatal(err)
		}
		for range 4 {
			if !ecdsa.VerifyASN1(key, sum[:], sig) {
				b.Fatal("DSSE signature does not verify")
			}
		}
		if tsr != nil {
			ts, err := timestamp.ParseResponse(tsr)
			if err != nil {
				b.Fatal(err)
			}
			p7, err := pkcs7.Parse(ts.RawToken)
			if err != nil {
				b.Fatal(err)
			}
			if err := p7.Verify(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFloor performs, per iteration, only the signature checks that
// differ from one bundle to the next and that no cache may save: the leaf
// certificate under the Fulcio intermediate (P-384), the timestamp
// response (P-384, v1.1.0 only), and four P-256 checks standing for the
// DSSE signature, the SCT, the log entry's signed entry timestamp and its
// checkpoint. It is the lower bound BenchmarkVerify is compared with.
func BenchmarkFloor(b *testing.B) {
	tr := productionRoot(b)
	for _, c := range realCases {
		floor := floorFunc(b, tr, c)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				floor()
			}
		})
	}
}

// BenchmarkVerifyInterleaved runs, in every iteration, one plain
// sigstore-go verification, one with the chain cache and the floor work,
// timing each: on a shared machine all three see the same load. It reports
// ms/op of each and the ratios cache/floor (target <= 2) and cache/plain.
func BenchmarkVerifyInterleaved(b *testing.B) {
	tr := productionRoot(b)
	for _, c := range realCases {
		b.Run(c.name, func(b *testing.B) {
			bun := loadBundle(b, c.bundle)
			policy := realPolicy(b, realIdentity, realIssuer, realDigest)
			plain := publicGoodVerifier(b, tr)
			cached := publicGoodVerifier(b, WithChainCache(tr))
			floor := floorFunc(b, tr, c)
			var tp, tc, tf time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := plain.Verify(bun, policy); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := cached.Verify(bun, policy); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				floor()
				t3 := time.Now()
				tp, tc, tf = tp+t1.Sub(t0), tc+t2.Sub(t1), tf+t3.Sub(t2)
			}
			n := float64(b.N)
			b.ReportMetric(tp.Seconds()*1e3/n, "sigstore-go-ms/op")
			b.ReportMetric(tc.Seconds()*1e3/n, "chaincache-ms/op")
			b.ReportMetric(tf.Seconds()*1e3/n, "floor-ms/op")
			b.ReportMetric(float64(tc)/float64(tf), "cache/floor")
			b.ReportMetric(float64(tc)/float64(tp), "cache/plain")
		})
	}
}
