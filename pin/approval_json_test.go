package pin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/evidence"
)

// TestApprovalJSON: an approval is written and read as a lock holds it
// (docs/LOCK.md), also where encoding/json writes it ('mcpsign pin
// --format json', the proxy's verifier answer): the tlog's integratedTime
// in Unix seconds, 0 for none, and read back to the same evidence.
func TestApprovalJSON(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	logID := strings.Repeat("ab", 32)
	tests := []struct {
		name string
		a    Approval
		want string
	}{
		{"Rekor v1", Approval{Method: evidence.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer", BundleDigest: "sha256:" + strings.Repeat("1", 64),
			Tlog: &evidence.Tlog{LogIndex: 7, LogID: logID, IntegratedTime: new(time.Unix(1767225600, 0).UTC())}, ApprovedAt: at},
			`{"method":"sigstore","identity":"a@example.com","issuer":"https://issuer","bundleDigest":"sha256:` + strings.Repeat("1", 64) + `","tlog":{"logIndex":7,"logId":"` + logID + `","integratedTime":1767225600},"approvedAt":"2026-05-01T12:00:00Z"}`},
		{"Rekor v2: no integrated time", Approval{Method: evidence.MethodKey, Identity: "sha256:" + strings.Repeat("2", 64), BundleDigest: "sha256:" + strings.Repeat("1", 64),
			Tlog: &evidence.Tlog{LogIndex: 0, LogID: logID}, ApprovedAt: at},
			`{"method":"key","identity":"sha256:` + strings.Repeat("2", 64) + `","issuer":"","bundleDigest":"sha256:` + strings.Repeat("1", 64) + `","tlog":{"logIndex":0,"logId":"` + logID + `","integratedTime":0},"approvedAt":"2026-05-01T12:00:00Z"}`},
		{"tofu, not in UTC", Approval{Method: MethodTOFU, ApprovedAt: at.In(time.FixedZone("x", 3600))},
			`{"method":"tofu","identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T12:00:00Z"}`},
		{"manual, HTML characters", Approval{Method: MethodManual, ApprovedAt: at, Reason: "<b>&</b>", Approver: "me", PreviousLockDigest: "sha256:" + strings.Repeat("3", 64)},
			`{"method":"manual","identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T12:00:00Z","reason":"<b>&</b>","approver":"me","previousLockDigest":"sha256:` + strings.Repeat("3", 64) + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(struct {
				A Approval `json:"a"`
			}{tc.a})
			if err != nil {
				t.Fatal(err)
			}
			direct, err := tc.a.MarshalJSON()
			if err != nil || string(direct) != tc.want {
				t.Fatalf("MarshalJSON:\n%s (%v)\nwant\n%s", direct, err, tc.want)
			}
			var back Approval
			if err := json.Unmarshal(got, &struct {
				A *Approval `json:"a"`
			}{&back}); err != nil {
				t.Fatal(err)
			}
			again, err := back.MarshalJSON()
			if err != nil || !bytes.Equal(again, direct) {
				t.Fatalf("reads back as %s (%v)", again, err)
			}
			if (back.Tlog == nil) != (tc.a.Tlog == nil) || (back.Tlog != nil && !back.Tlog.Equal(*tc.a.Tlog)) {
				t.Errorf("tlog reads back as %+v, was %+v", back.Tlog, tc.a.Tlog)
			}
		})
	}
}

// TestApprovalUnmarshalRefuses: UnmarshalJSON reads as strictly as Parse.
func TestApprovalUnmarshalRefuses(t *testing.T) {
	const base = `"identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T12:00:00Z"`
	tests := []struct {
		name, data, want string
	}{
		{"repeated member", `{"method":"tofu","method":"key",` + base + `}`, "method"},
		{"unknown member", `{"method":"tofu","extra":1,` + base + `}`, "extra"},
		{"member in another case", `{"Method":"tofu",` + base + `}`, "Method"},
		{"approvedAt not in UTC", `{"method":"tofu","identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T13:00:00+01:00"}`, "UTC"},
		{"integratedTime a string", `{"method":"key",` + base + `,"tlog":{"logIndex":1,"logId":"ab","integratedTime":"2026-05-01T12:00:00Z"}}`, "integratedTime"},
		{"integratedTime a fraction", `{"method":"key",` + base + `,"tlog":{"logIndex":1,"logId":"ab","integratedTime":1.5}}`, "integratedTime"},
		{"tlog without logId", `{"method":"key",` + base + `,"tlog":{"logIndex":1,"integratedTime":1}}`, "logId"},
		{"not an object", `["tofu"]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Approval
			err := json.Unmarshal([]byte(tc.data), &a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Unmarshal = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// FuzzApprovalJSON: an approval UnmarshalJSON accepts writes back to bytes
// that read again to the same bytes.
func FuzzApprovalJSON(f *testing.F) {
	f.Add([]byte(`{"method":"sigstore","identity":"a","issuer":"i","bundleDigest":"sha256:00","tlog":{"logIndex":7,"logId":"ab","integratedTime":1767225600},"approvedAt":"2026-05-01T12:00:00Z"}`))
	f.Add([]byte(`{"method":"key","identity":"a","issuer":"","bundleDigest":"","tlog":{"logIndex":0,"logId":"ab","integratedTime":0},"approvedAt":"2026-05-01T12:00:00.5Z"}`))
	f.Add([]byte(`{"method":"key","identity":"a","issuer":"","bundleDigest":"","tlog":{"logIndex":0,"logId":"ab","integratedTime":-5},"approvedAt":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"method":"manual","identity":"","issuer":"","bundleDigest":"","approvedAt":"2026-05-01T12:00:00Z","reason":"r","approver":"a","previousLockDigest":"p","sourceRevision":"s"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a Approval
		if a.UnmarshalJSON(data) != nil {
			return
		}
		first, err := a.MarshalJSON()
		if err != nil {
			t.Fatalf("an approval read does not write: %v", err)
		}
		var b Approval
		if err := b.UnmarshalJSON(first); err != nil {
			t.Fatalf("%s does not read again: %v", first, err)
		}
		second, err := b.MarshalJSON()
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("writes %s, then %s (%v)", first, second, err)
		}
	})
}
