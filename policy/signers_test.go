package policy_test

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

// leafCert hands sigstore-go's signer a certificate issued for its key.
type leafCert struct{ der []byte }

func (c leafCert) GetCertificate(context.Context, sgsign.Keypair, *sgsign.CertificateProviderOptions) ([]byte, error) {
	return c.der, nil
}

// signWithCert signs snap with s's key under the certificate leaf (the
// certificate method): a new bundle each call.
func (s signer) signWithCert(t *testing.T, snap *digest.Snapshot, leaf *x509.Certificate) []byte {
	t.Helper()
	return s.signWith(t, snap, sgsign.BundleOptions{CertificateProvider: leafCert{leaf.Raw}})
}

// TestDecideOneSignerTwoIdentities: one signer counts once, however many
// listed identities it meets (docs/POLICY.md "Threshold"): a key listed as
// a key and certified by the CA; one key certified twice, under two
// listed subjects; one certificate that an exact and a regexp identity
// both match (an overlap the parser accepts). Each signs two bundles, so
// that two identities are met by two bundles of one signer: a threshold of
// 2 is not met. Two distinct signers, the control row, meet it.
func TestDecideOneSignerTwoIdentities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testpki.New(t, testpki.Names{Organization: "Corp", Root: "Corp Root", Intermediate: "Corp Signing"})
	if err := os.WriteFile(filepath.Join(dir, "roots.pem"), testpki.PEM(ca.Root), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "intermediates.pem"), testpki.PEM(ca.Intermediate), 0o644); err != nil {
		t.Fatal(err)
	}
	one, other := newSigner(t, dir, "one"), newSigner(t, dir, "other")
	cert := func(s signer, cn string) *x509.Certificate {
		return ca.Issue(t, s.key.GetPublicKey(), testpki.CodeSigningLeaf(t, cn, "Corp", cn+"@corp.example"))
	}
	snap := served()
	release, ops := cert(one, "release"), cert(one, "ops")
	otherOps, otherRelease := cert(other, "ops"), cert(other, "release")
	const (
		key      = `{"method":"key","key":"one.pub.pem"}`
		otherKey = `{"method":"key","key":"other.pub.pem"}`
		relSubj  = `{"method":"certificate","subject":"CN=release,O=Corp"}`
		opsSubj  = `{"method":"certificate","subject":"CN=ops,O=Corp"}`
		relExact = `{"method":"certificate","san":"release@corp.example"}`
		relRe    = `{"method":"certificate","sanRegexp":"release@corp\\.example"}`
		anyRe    = `{"method":"certificate","sanRegexp":"(release|ops)@corp\\.example"}`
		nobody   = `{"method":"certificate","subject":"CN=nobody,O=Corp"}`
	)
	for _, c := range []struct {
		name    string
		ids     []string
		bundles [][]byte
		signers int // distinct signers found
		holds   bool
		// first is, for each signer in order, the bundle whose result it
		// holds: its first bundle's (a merged signer takes the place and
		// the result of the first it merged).
		first []int
		// notCounted is the reason of the identity no signer counts for
		// (nil: ErrSignerCounted).
		notCounted error
	}{
		{"a key listed as a key and certified by the CA", []string{key, relSubj}, [][]byte{one.sign(t, snap), one.signWithCert(t, snap, release)}, 1, false, []int{0}, nil},
		{"the certificate first", []string{key, relSubj}, [][]byte{one.signWithCert(t, snap, release), one.sign(t, snap)}, 1, false, []int{0}, nil},
		{"one key certified twice", []string{relSubj, opsSubj}, [][]byte{one.signWithCert(t, snap, release), one.signWithCert(t, snap, ops)}, 1, false, []int{0}, nil},
		{"an exact and a regexp identity of one certificate", []string{relExact, relRe}, [][]byte{one.signWithCert(t, snap, release), one.signWithCert(t, snap, release)}, 1, false, []int{0}, nil},
		// A signer merged after another signer's bundle keeps its place.
		{"a key, another signer, the key certified", []string{key, relSubj, opsSubj},
			[][]byte{one.sign(t, snap), other.signWithCert(t, snap, otherOps), one.signWithCert(t, snap, release)}, 2, true, []int{0, 1}, nil},
		// The third bundle joins two signers: one subject certified for
		// both keys makes them one.
		{"one subject certified for two keys", []string{relSubj, otherKey},
			[][]byte{one.signWithCert(t, snap, release), other.sign(t, snap), other.signWithCert(t, snap, otherRelease)}, 1, false, []int{0}, nil},
		// Two signers of one identity count for it once: one identity is
		// one signature, whoever else signs.
		{"two signers of one identity", []string{anyRe, nobody},
			[][]byte{one.signWithCert(t, snap, release), other.signWithCert(t, snap, otherOps)}, 2, false, []int{0, 1}, verify.ErrIdentityMismatch},
		// Control: two keys, two subjects.
		{"two signers", []string{relSubj, opsSubj}, [][]byte{one.signWithCert(t, snap, release), other.signWithCert(t, snap, otherOps)}, 2, true, []int{0, 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"kind":"mcpsign.policy","policyVersion":1,"trust":{"caRoots":"roots.pem","caIntermediates":"intermediates.pem"},` +
				`"servers":{"notes":{"identities":[` + strings.Join(c.ids, ",") + `],"threshold":2,"lock":"n.lock"}}}`
			// Paths in the policy are the shared directory's.
			body = strings.ReplaceAll(body, `"roots.pem"`, `"`+filepath.Join(dir, "roots.pem")+`"`)
			body = strings.ReplaceAll(body, `"intermediates.pem"`, `"`+filepath.Join(dir, "intermediates.pem")+`"`)
			body = strings.ReplaceAll(body, `"one.pub.pem"`, `"`+one.pem+`"`)
			body = strings.ReplaceAll(body, `"other.pub.pem"`, `"`+other.pem+`"`)
			r := resolveNotes(t, filepath.Join(t.TempDir(), "policy.json"), dir, body)
			d := policy.NewDecider(policy.DeciderOptions{AllowCurrentTime: true})
			dec, err := d.Decide(context.Background(), r, c.bundles, snap)
			if dec == nil || len(dec.Results) != len(c.bundles) {
				t.Fatalf("the bundles do not all verify: %v", err)
			}
			if len(dec.Signers) != c.signers {
				t.Fatalf("%d signers, want %d", len(dec.Signers), c.signers)
			}
			counted := 0
			for i, s := range dec.Signers {
				if got := slices.Index(dec.Results, s.Result); got != c.first[i] {
					t.Errorf("signer %d holds the result of bundle %d, want %d", i, got, c.first[i])
				}
				// Each counts for an identity it satisfies, or none (-1).
				switch {
				case s.Counted >= 0 && slices.Contains(s.Identities, s.Counted):
					counted++
				case s.Counted != -1:
					t.Errorf("signer %d counts for identity %d, not one of its %v", i, s.Counted, s.Identities)
				}
			}
			if counted != dec.Matched {
				t.Errorf("%d signers count, matched %d", counted, dec.Matched)
			}
			if c.holds {
				if err != nil || dec.Matched != 2 {
					t.Fatalf("matched %d: %v", dec.Matched, err)
				}
				return
			}
			var de *policy.DecisionError
			if !errors.Is(err, policy.ErrThreshold) || !errors.As(err, &de) || dec.Matched != 1 {
				t.Fatalf("matched %d: %v, want ErrThreshold", dec.Matched, err)
			}
			// The identity the one signer does not count for says so.
			if n := len(de.Reasons); n != 2 || (de.Reasons[0] == nil) == (de.Reasons[1] == nil) {
				t.Fatalf("reasons %v", de.Reasons)
			}
			want := c.notCounted
			if want == nil {
				want = policy.ErrSignerCounted
			}
			for _, reason := range de.Reasons {
				if reason != nil && !errors.Is(reason, want) {
					t.Errorf("reason %v, want %v", reason, want)
				}
			}
			if step, _ := verify.FailedStep(err); step != verify.StepIdentity {
				t.Errorf("step %q", step)
			}
		})
	}
}
