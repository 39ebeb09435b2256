package trustroot

import (
	"encoding/hex"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// The public-good bundles of testdata/real-bundles (README.md
// there): model-transparency v1.0.0 has a Rekor v1 entry only; v1.1.0 adds
// an RFC 3161 timestamp from timestamp.sigstore.dev.
const (
	realIdentity = "stefanb@us.ibm.com"
	realIssuer   = "https://sigstore.verify.ibm.com/oauth2"
	realDigest   = "61d4849d9d90076d6215f4d525f13d6574af8e3f67aef3e6f36fc40a14fdd226"
	realRoot     = "real-bundles/trusted-roots/production_trusted_root.sigstore-python.json"
)

type realCase struct {
	name   string
	bundle string
	tsa    bool
}

var realCases = []realCase{
	{"v1.0.0-tlog", "real-bundles/model-transparency-v1.0.0-sigstore.model.sig.json", false},
	{"v1.1.0-tsa", "real-bundles/model-transparency-v1.1.0-sigstore.model.sig.json", true},
}

func productionRoot(t testing.TB) *root.TrustedRoot {
	t.Helper()
	tr, err := root.NewTrustedRootFromPath(shareddata.Path(t, realRoot))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func loadBundle(t testing.TB, rel string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.LoadJSONFromPath(shareddata.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// publicGoodVerifier is the policy cosign applies to a keyless bundle:
// SCT, a log entry, and an observer timestamp (log or TSA).
func publicGoodVerifier(t testing.TB, tm root.TrustedMaterial) *verify.Verifier {
	t.Helper()
	v, err := verify.NewVerifier(tm,
		verify.WithSignedCertificateTimestamps(1),
		verify.WithTransparencyLog(1),
		verify.WithObserverTimestamps(1))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func realPolicy(t testing.TB, san, issuer, digestHex string) verify.PolicyBuilder {
	t.Helper()
	id, err := verify.NewShortCertificateIdentity(issuer, "", san, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := hex.DecodeString(digestHex)
	if err != nil {
		t.Fatal(err)
	}
	return verify.NewPolicy(verify.WithArtifactDigest("sha256", d), verify.WithCertificateIdentity(id))
}
