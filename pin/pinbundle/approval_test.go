package pinbundle

import (
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

func TestApprovalOf(t *testing.T) {
	at := time.Unix(1767225600, 0)
	bd := "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	snap, err := digest.ParseSnapshot([]byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		res  verify.Result
		want pin.Approval
	}{
		{"keyless with a log entry", verify.Result{Method: verify.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd,
			Tlog: &verify.TlogEvidence{LogIndex: 9, LogID: "0a", IntegratedTime: &at}},
			pin.Approval{Method: pin.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd, Tlog: &pin.TlogEntry{LogIndex: 9, LogID: "0a", IntegratedTime: 1767225600}}},
		{"Rekor v2: no integrated time", verify.Result{Method: verify.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd,
			Tlog: &verify.TlogEvidence{LogIndex: 9, LogID: "0a"}},
			pin.Approval{Method: pin.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd, Tlog: &pin.TlogEntry{LogIndex: 9, LogID: "0a"}}},
		{"key", verify.Result{Method: verify.MethodKey, Identity: "sha256:00", BundleDigest: bd},
			pin.Approval{Method: pin.MethodKey, Identity: "sha256:00", BundleDigest: bd}},
		{"certificate with a SAN: the CA's DN is not an OIDC issuer", verify.Result{Method: verify.MethodCertificate, Identity: "release@example.com", Subject: "CN=r", Issuer: "CN=Corp CA", BundleDigest: bd},
			pin.Approval{Method: pin.MethodCertificate, Identity: "release@example.com", BundleDigest: bd}},
		{"certificate without a SAN", verify.Result{Method: verify.MethodCertificate, Subject: "CN=release,O=Example", Issuer: "CN=Corp CA", BundleDigest: bd},
			pin.Approval{Method: pin.MethodCertificate, Identity: "CN=release,O=Example", BundleDigest: bd}},
	}
	for _, tc := range tests {
		got := ApprovalOf(&tc.res)
		if got.Method != tc.want.Method || got.Identity != tc.want.Identity || got.Issuer != tc.want.Issuer || got.BundleDigest != tc.want.BundleDigest ||
			(got.Tlog == nil) != (tc.want.Tlog == nil) || (got.Tlog != nil && *got.Tlog != *tc.want.Tlog) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		got.ApprovedAt = at
		if _, err := pin.NewLock(snap, got); err != nil {
			t.Errorf("%s: the approval does not make a lock: %v", tc.name, err)
		}
	}
}
