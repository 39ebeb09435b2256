package verify

import (
	"context"
	"encoding/hex"
	"reflect"
	"testing"
)

// TestTlogEvidenceNotTwice: for a bundle with one log entry, verified by
// the sigstore method, the evidence taken from sigstore-go's own check of
// that entry is the evidence of checking it again on its own, on every real
// bundle.
func TestTlogEvidenceNotTwice(t *testing.T) {
	tm := productionRoot(t)
	for _, rb := range realBundles {
		t.Run(rb.file, func(t *testing.T) {
			v, err := New(Trust{Sigstore: tm}, sigstorePolicy(rb.identity, rb.issuer))
			if err != nil {
				t.Fatal(err)
			}
			data := readShared(t, "real-bundles/"+rb.file)
			dg, _ := hex.DecodeString(rb.digest)
			res, err := v.VerifyBundle(context.Background(), data, Artifact{Digest: dg, DigestAlgorithm: rb.alg})
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseBundle(data, false)
			if err != nil {
				t.Fatal(err)
			}
			if entries, _ := b.TlogEntries(); len(entries) != 1 {
				t.Skipf("%d log entries: each is checked on its own", len(entries))
			}
			again, err := tlogEvidence(newParsedBundle(b), v.trust, res.Timestamps, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Tlog, again) {
				t.Errorf("evidence %+v, checked again %+v", res.Tlog, again)
			}
		})
	}
}
