package monitor

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// TestRealPublicGoodV1Entries reads the Rekor v1 entries of real
// public-good bundles (testdata/real-bundles: hashedrekord, dsse and
// intoto entries of rekor.sigstore.dev) through the monitor's own code: the
// body reader finds the bundle's certificate and the digest the bundle's
// Released entry holds, the watched identity of the manifest matches it, and
// the checkpoint of each entry's inclusion proof verifies with the
// production trusted root's Rekor key (and not with another origin).
func TestRealPublicGoodV1Entries(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "real-bundles")
	tm, err := trustroot.LoadTrustedRootFile(filepath.Join(dir, "trusted-roots", "production_trusted_root.sigstore-python.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		col := strings.Split(sc.Text(), "\t")
		if len(col) < 7 || col[6] != "production" {
			continue
		}
		name, identity, issuer := col[0], col[3], col[4]
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := verify.ParseBundle(data, true)
			if err != nil {
				t.Fatal(err)
			}
			rel := mustReleased(t, tm, identity, issuer)
			proven := b.HasInclusionProof()
			if err := rel.AddBundle(context.Background(), data); (err == nil) != proven {
				// A v0.1 bundle has a signed entry timestamp, no inclusion
				// proof: it releases nothing (docs/MONITOR.md "Released").
				t.Fatalf("inclusion proof %v: %v", proven, err)
			}
			m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{{SAN: identity, Issuer: issuer}})
			if err != nil {
				t.Fatal(err)
			}
			for _, te := range b.GetVerificationMaterial().GetTlogEntries() {
				e, err := parseEntryV1(te.GetCanonicalizedBody())
				if err != nil {
					t.Fatalf("entry %d: %v", te.GetLogIndex(), err)
				}
				kinds[e.kind+" "+e.apiVersion]++
				if proven != rel.releasedIn(e.Digest(), []string{hex.EncodeToString(te.GetLogId().GetKeyId())}) {
					t.Errorf("entry %d: its digest %s is not released by its own bundle", te.GetLogIndex(), e.Digest())
				}
				var matched bool
				for _, s := range e.signers {
					if !s.cert {
						continue
					}
					var view x509.Certificate
					if !identityView(s.der, &view) || !m.MayMatch(&view) {
						t.Fatalf("entry %d: the identity view does not match %s", te.GetLogIndex(), identity)
					}
					cert, err := x509.ParseCertificate(s.der)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := m.Match(cert); err == nil && got.Identity == identity {
						matched = true
					}
				}
				if !matched {
					t.Errorf("entry %d: no certificate of %s", te.GetLogIndex(), identity)
				}
				cp := te.GetInclusionProof().GetCheckpoint().GetEnvelope()
				if cp == "" {
					continue // a bundle v0.1 entry without a checkpoint
				}
				origin, _, _ := strings.Cut(cp, "\n")
				l := &v1Log{}
				if l.verifiers, err = v1Verifiers(tm, origin); err != nil {
					t.Fatal(err)
				}
				if _, err := l.checkpoint(cp, origin); err != nil {
					t.Errorf("entry %d: checkpoint of %q: %v", te.GetLogIndex(), origin, err)
				}
				if _, err := l.checkpoint(cp, "rekor.sigstore.dev - 1"); err == nil {
					t.Error("a checkpoint of another origin accepted")
				}
				i := strings.LastIndex(cp, " ") + 12
				if _, err := l.checkpoint(cp[:i]+flipB64(cp[i])+cp[i+1:], origin); err == nil {
					t.Error("a checkpoint with a bad signature accepted")
				}
			}
		})
	}
	t.Logf("entry kinds: %v", kinds)
}
