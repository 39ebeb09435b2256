package trustroot

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"slices"
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
	f := floorParts(b, tr, c)
	return func() {
		f.leaf()
		for range 4 {
			f.p256()
		}
		if f.tsa != nil {
			f.tsa()
		}
	}
}

type floorWork struct {
	leaf, p256, tsa func() // tsa is nil without a timestamp
}

// floorParts returns the per-bundle signature checks of a real case: the
// leaf under the Fulcio intermediate (P-384), one P-256 check (the DSSE
// signature), and the timestamp response (parse and its P-384 signature,
// once: the timestamp-authority library checks it twice).
func floorParts(b *testing.B, tr *root.TrustedRoot, c realCase) floorWork {
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
	var tsaLeaf *x509.Certificate
	for _, a := range tr.TimestampingAuthorities() {
		tsaLeaf = a.(*root.SigstoreTimestampingAuthority).Leaf
	}
	w := floorWork{
		leaf: func() {
			if err := leaf.CheckSignatureFrom(inter); err != nil {
				b.Fatal(err)
			}
		},
		p256: func() {
			if !ecdsa.VerifyASN1(key, sum[:], sig) {
				b.Fatal("DSSE signature does not verify")
			}
		},
	}
	if tsr != nil {
		w.tsa = func() {
			// ParseResponse checks the signature when the response embeds
			// its certificate (the public-good TSA's do); otherwise check it
			// here. Either way: one signature.
			ts, err := timestamp.ParseResponse(tsr)
			if err != nil {
				b.Fatal(err)
			}
			if len(ts.Certificates) == 0 {
				p7, err := pkcs7.Parse(ts.RawToken)
				if err != nil {
					b.Fatal(err)
				}
				p7.Certificates = []*x509.Certificate{tsaLeaf}
				if err := p7.Verify(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return w
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

// BenchmarkFloorParts times each per-bundle check of BenchmarkFloor alone.
func BenchmarkFloorParts(b *testing.B) {
	tr := productionRoot(b)
	f := floorParts(b, tr, realCases[1])
	for name, fn := range map[string]func(){"leaf-P384": f.leaf, "dsse-P256": f.p256, "tsa-response": f.tsa} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				fn()
			}
		})
	}
}

// BenchmarkVerifyInterleaved runs, in every iteration, one plain
// sigstore-go verification, one with the chain cache and the floor work,
// timing each: on a shared machine all three see the same load. It reports
// the median time of each (robust to the preemptions of a loaded machine)
// and the ratios of the medians cache/floor (target <= 2) and cache/plain.
func BenchmarkVerifyInterleaved(b *testing.B) {
	tr := productionRoot(b)
	for _, c := range realCases {
		b.Run(c.name, func(b *testing.B) {
			bun := loadBundle(b, c.bundle)
			policy := realPolicy(b, realIdentity, realIssuer, realDigest)
			plain := publicGoodVerifier(b, tr)
			cached := publicGoodVerifier(b, WithChainCache(tr))
			floor := floorFunc(b, tr, c)
			var tp, tc, tf []time.Duration
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
				tp, tc, tf = append(tp, t1.Sub(t0)), append(tc, t2.Sub(t1)), append(tf, t3.Sub(t2))
			}
			mp, mc, mf := median(tp), median(tc), median(tf)
			b.ReportMetric(mp.Seconds()*1e3, "sigstore-go-ms")
			b.ReportMetric(mc.Seconds()*1e3, "chaincache-ms")
			b.ReportMetric(mf.Seconds()*1e3, "floor-ms")
			b.ReportMetric(float64(mc)/float64(mf), "cache/floor")
			b.ReportMetric(float64(mc)/float64(mp), "cache/plain")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
