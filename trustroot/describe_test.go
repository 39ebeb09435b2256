package trustroot

import (
	"testing"
	"time"
)

// TestDescribeCertDN: subjects and issuers are the internal/dn form of the
// DER (every RDN, RFC 2253 escapes written once), not pkix.Name's.
func TestDescribeCertDN(t *testing.T) {
	root := issue(t, certSpec{cn: "Root, Inc.", org: `A\B`, ca: true}, nil)
	leaf := issue(t, certSpec{cn: "leaf+1", org: "Example"}, root)
	d := describeCert(leaf.cert, "leaf", time.Now())
	if want := `CN=leaf\+1,O=Example`; d.Subject != want {
		t.Errorf("subject %s, want %s", d.Subject, want)
	}
	if want := `CN=Root\, Inc.,O=A\\B`; d.Issuer != want {
		t.Errorf("issuer %s, want %s", d.Issuer, want)
	}
}
