package pinbundle

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
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
			pin.Approval{Method: verify.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd, Tlog: &verify.TlogEvidence{LogIndex: 9, LogID: "0a", IntegratedTime: new(time.Unix(1767225600, 0).UTC())}}},
		{"Rekor v2: no integrated time", verify.Result{Method: verify.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd,
			Tlog: &verify.TlogEvidence{LogIndex: 9, LogID: "0a"}},
			pin.Approval{Method: verify.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: bd, Tlog: &verify.TlogEvidence{LogIndex: 9, LogID: "0a"}}},
		{"key", verify.Result{Method: verify.MethodKey, Identity: "sha256:00", BundleDigest: bd},
			pin.Approval{Method: verify.MethodKey, Identity: "sha256:00", BundleDigest: bd}},
		{"certificate with a SAN: the CA's DN is not an OIDC issuer", verify.Result{Method: verify.MethodCertificate, Identity: "release@example.com", Subject: "CN=r", Issuer: "CN=Corp CA", BundleDigest: bd},
			pin.Approval{Method: verify.MethodCertificate, Identity: "release@example.com", BundleDigest: bd}},
		{"certificate without a SAN", verify.Result{Method: verify.MethodCertificate, Subject: "CN=release,O=Example", Issuer: "CN=Corp CA", BundleDigest: bd},
			pin.Approval{Method: verify.MethodCertificate, Identity: "CN=release,O=Example", BundleDigest: bd}},
	}
	for _, tc := range tests {
		got := ApprovalOf(&tc.res)
		if got.Method != tc.want.Method || got.Identity != tc.want.Identity || got.Issuer != tc.want.Issuer || got.BundleDigest != tc.want.BundleDigest ||
			(got.Tlog == nil) != (tc.want.Tlog == nil) || (got.Tlog != nil && (!got.Tlog.Equal(*tc.want.Tlog) || got.Tlog.IntegratedTime != nil && got.Tlog.IntegratedTime.Location() != time.UTC)) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		got.ApprovedAt = at
		if _, err := pin.NewLock(snap, got); err != nil {
			t.Errorf("%s: the approval does not make a lock: %v", tc.name, err)
		}
	}
}

func TestVerifiedOf(t *testing.T) {
	t1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	t2 := t1.Add(time.Minute)
	now := t2.Add(time.Hour)
	bd := "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	ts := func(typ string, at time.Time) sgverify.TimestampVerificationResult {
		return sgverify.TimestampVerificationResult{Type: typ, Timestamp: at}
	}
	tests := []struct {
		name string
		ts   []sgverify.TimestampVerificationResult
		want time.Time
	}{
		{"no timestamps", nil, time.Time{}},
		{"the current time is no evidence", []sgverify.TimestampVerificationResult{ts("CurrentTime", now)}, time.Time{}},
		{"log", []sgverify.TimestampVerificationResult{ts("Tlog", t2)}, t2},
		{"timestamp authority", []sgverify.TimestampVerificationResult{ts("TimestampAuthority", t1)}, t1},
		{"the earliest verified time", []sgverify.TimestampVerificationResult{ts("Tlog", t2), ts("CurrentTime", t1.Add(-time.Hour)), ts("TimestampAuthority", t1)}, t1},
		{"an unknown kind is no evidence", []sgverify.TimestampVerificationResult{ts("Other", t1)}, time.Time{}},
	}
	for _, tc := range tests {
		res := verify.Result{Method: verify.MethodKey, Identity: "sha256:00", BundleDigest: bd,
			Server: digest.ServerInfo{Name: "notes", Version: "2.0.0"}, Timestamps: tc.ts}
		got := VerifiedOf(&res)
		if !got.SignedAt.Equal(tc.want) || (!got.SignedAt.IsZero() && got.SignedAt.Location() != time.UTC) {
			t.Errorf("%s: signedAt %v, want %v (UTC)", tc.name, got.SignedAt, tc.want)
		}
		if got.Server != res.Server || got.Approval.Identity != "sha256:00" || got.Approval.BundleDigest != bd {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
}

// TestVerifierSignedServer: Verifier reports the server the statement
// signs, not the serverInfo the server announced.
func TestVerifierSignedServer(t *testing.T) {
	pub := publisher.New(t)
	path := filepath.Join(t.TempDir(), "b.sigstore.json")
	pub.Sign(t, snapshot(t, honestSnap), path) // notes 1.0.0
	observed := snapshot(t, honestSnap)
	observed.Server = digest.ServerInfo{Name: "twofaced", Version: "9.9.9"}
	got, err := Verifier(pub.Verifier, path)(context.Background(), observed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != (digest.ServerInfo{Name: "notes", Version: "1.0.0"}) || got.Approval.Method != verify.MethodKey || !got.SignedAt.IsZero() {
		t.Errorf("%+v: want the signed server notes 1.0.0 and no signing time", got)
	}
}
