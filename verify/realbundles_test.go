package verify

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// realBundle is a row of testdata/real-bundles/manifest.tsv.
type realBundle struct {
	file, identity, issuer string
	alg, digest            string // hex
	artifact               string // file under artifacts/, or ""
}

const (
	ibmID      = "stefanb@us.ibm.com"
	ibmIssuer  = "https://sigstore.verify.ibm.com/oauth2"
	ghIssuer   = "https://token.actions.githubusercontent.com"
	modelSHA   = "61d4849d9d90076d6215f4d525f13d6574af8e3f67aef3e6f36fc40a14fdd226"
	aTxtSHA    = "a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf"
	jsWorkflow = "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main"
)

var realBundles = []realBundle{
	{"model-transparency-v1.1.0-sigstore.model.sig.json", ibmID, ibmIssuer, "sha256", modelSHA, ""},
	{"model-transparency-v1.0.1-sigstore.model.sig.json", ibmID, ibmIssuer, "sha256", modelSHA, ""},
	{"model-transparency-v1.0.0-sigstore.model.sig.json", ibmID, ibmIssuer, "sha256", modelSHA, ""},
	{"model-transparency-v0.3.1-sigstore.model.sig.json", ibmID, ibmIssuer, "sha256", modelSHA, ""},
	{"conformance-happy-path-intoto-in-dsse-v3.sigstore.json",
		"https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main",
		ghIssuer, "sha256", aTxtSHA, "a.txt"},
	{"sigstore-js-2.0.0-npm-provenance.sigstore.json", jsWorkflow, ghIssuer, "sha512",
		"46d4e2f74c4877316640000a6fdf8a8b59f1e0847667973e9859f774dd31b8f1e0937813b777fb66a2ac67d50540fe34640966eee9fc2ccca387082b4c85cd3c", ""},
	{"sigstore-js-1.3.0-npm-provenance.sigstore.json", jsWorkflow, ghIssuer, "sha512",
		"76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751", ""},
	{"dsse-2022-slsa-provenance-0.0.7.sigstore.json", "brian@dehamer.com", "https://github.com/login/oauth", "sha512",
		"bbfd372fc9beeb777fe35d05bb10c0c70a9733d366a75fed7dd18866c7391de3ee7e88ba74dd47abf3e15c845e547fcf0e5c3da80854c751554224d3a6d4e55f", ""},
	{"rfc8785.py-0.1.2-whl.sigstore.json", "https://github.com/trailofbits/rfc8785.py/.github/workflows/release.yml@refs/tags/v0.1.2",
		ghIssuer, "sha256", "c4e92e9ecc828bef2aa7dba1de8ac983511f7532a0df11c770d39099a25cf201", "rfc8785-0.1.2-py3-none-any.whl"},
}

func productionRoot(t testing.TB) root.TrustedMaterial {
	t.Helper()
	tr, err := root.NewTrustedRootFromPath(shareddata.Path(t, "real-bundles/trusted-roots/production_trusted_root.sigstore-python.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func readShared(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(shareddata.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sigstorePolicy(id, issuer string) Policy {
	return Policy{Method: MethodSigstore, Identities: []Identity{{SAN: id, Issuer: issuer}}}
}

// TestRealBundles verifies the public-good bundles offline with their
// identity and the production trusted root, by digest and by artifact,
// and checks that a wrong identity, issuer or digest fails at its step.
func TestRealBundles(t *testing.T) {
	tm := productionRoot(t)
	ctx := context.Background()
	for _, rb := range realBundles {
		t.Run(rb.file, func(t *testing.T) {
			data := readShared(t, "real-bundles/"+rb.file)
			dg, _ := hex.DecodeString(rb.digest)
			wrong := append([]byte(nil), dg...)
			wrong[len(wrong)-1] ^= 1
			mustNew := func(p Policy) *Verifier {
				v, err := New(Trust{Sigstore: tm}, p)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			good := mustNew(sigstorePolicy(rb.identity, rb.issuer))

			res, err := good.VerifyBundle(ctx, data, Artifact{Digest: dg, DigestAlgorithm: rb.alg})
			if err != nil {
				t.Fatalf("verify by digest: %v", err)
			}
			if !res.Verified || res.Identity != rb.identity || res.Issuer != rb.issuer {
				t.Errorf("result %+v", res)
			}
			if res.Tlog == nil || res.Tlog.IntegratedTime == nil || res.SigningTime.IsZero() {
				t.Errorf("no verified log entry / signing time: %+v", res.Tlog)
			}
			// sigstore-go's result names the identity the policy matched
			// (verified by mcpsign, not by sigstore-go, which is given none).
			if vi := res.Sigstore.VerifiedIdentity; vi == nil || vi.SubjectAlternativeName.SubjectAlternativeName != rb.identity || vi.Issuer.Issuer != rb.issuer {
				t.Errorf("sigstore-go's verified identity %+v, want %s from %s", vi, rb.identity, rb.issuer)
			}
			if res.BundleDigest != BundleDigest(data) || !strings.HasPrefix(res.BundleDigest, "sha256:") {
				t.Errorf("bundle digest %s", res.BundleDigest)
			}
			if rb.artifact != "" {
				f, err := os.Open(shareddata.Path(t, filepath.Join("real-bundles/artifacts", rb.artifact)))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := good.VerifyBundle(ctx, data, Artifact{Reader: f}); err != nil {
					t.Errorf("verify by artifact: %v", err)
				}
			}

			fails := []struct {
				name string
				v    *Verifier
				dg   []byte
				step Step
			}{
				// Not a subject: the signature is not in question, the match is
				// (ErrNotSubject).
				{"wrong digest", good, wrong, StepMatch},
				{"wrong identity", mustNew(sigstorePolicy("x"+rb.identity, rb.issuer)), dg, StepIdentity},
				{"wrong issuer", mustNew(sigstorePolicy(rb.identity, rb.issuer+"x")), dg, StepIdentity},
				// Unanchored, the regexp would match the real identity.
				{"unanchored identity regexp", mustNew(Policy{Method: MethodSigstore, Identities: []Identity{{
					SANRegexp: strings.TrimSuffix(rb.identity[1:], rb.identity[len(rb.identity)-1:]), Issuer: rb.issuer}}}), dg, StepIdentity},
				{"unanchored issuer regexp", mustNew(Policy{Method: MethodSigstore, Identities: []Identity{{
					SAN: rb.identity, IssuerRegexp: "sigstore|github"}}}), dg, StepIdentity},
			}
			for _, f := range fails {
				_, err := f.v.VerifyBundle(ctx, data, Artifact{Digest: f.dg, DigestAlgorithm: rb.alg})
				if step, ok := FailedStep(err); !ok || step != f.step {
					t.Errorf("%s: got %v, want a failure at %s", f.name, err, f.step)
				}
				if f.step == StepMatch && !errors.Is(err, ErrNotSubject) {
					t.Errorf("%s: got %v, want ErrNotSubject", f.name, err)
				}
			}
			// An anchored regexp of the full identity passes.
			re := mustNew(Policy{Method: MethodSigstore, Identities: []Identity{{SANRegexp: regexp.QuoteMeta(rb.identity), IssuerRegexp: regexp.QuoteMeta(rb.issuer)}}})
			if _, err := re.VerifyBundle(ctx, data, Artifact{Digest: dg, DigestAlgorithm: rb.alg}); err != nil {
				t.Errorf("quoted regexps: %v", err)
			}
		})
	}
}

// TestRealBundlesAreNotMcpsignStatements: Verify refuses a real, validly
// signed bundle whose statement is not ours: a foreign predicate type
// (model_signing), an in-toto Statement v0.1 (sigstore-js 1.3.0), a
// message signature (a wheel).
func TestRealBundlesAreNotMcpsignStatements(t *testing.T) {
	tm := productionRoot(t)
	for _, tc := range []struct {
		file string
		want error
	}{
		{"model-transparency-v1.1.0-sigstore.model.sig.json", attest.ErrPredicateType},
		{"sigstore-js-1.3.0-npm-provenance.sigstore.json", attest.ErrStatementType},
		{"rfc8785.py-0.1.2-whl.sigstore.json", nil},
	} {
		var rb realBundle
		for _, r := range realBundles {
			if r.file == tc.file {
				rb = r
			}
		}
		v, err := New(Trust{Sigstore: tm}, sigstorePolicy(rb.identity, rb.issuer))
		if err != nil {
			t.Fatal(err)
		}
		res, err := v.Verify(context.Background(), readShared(t, "real-bundles/"+tc.file), exampleSnapshot())
		step, _ := FailedStep(err)
		if step != StepStatement || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: got %v, want a statement failure (%v)", tc.file, err, tc.want)
		}
		if res == nil || res.Verified || (tc.want != nil && res.Identity != rb.identity) {
			t.Errorf("%s: result %+v", tc.file, res)
		}
	}
}
