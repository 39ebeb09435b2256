package policy_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/internal/testkit/virtualsigstore"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

// virtualRoot is an in-process Sigstore and its trusted_root.json in dir
// (its timestamp authority and log): a trust a key identity can require a
// timestamp or a log entry under, with no stack.
func virtualRoot(t *testing.T, dir string) (*ca.VirtualSigstore, string) {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return vs, virtualsigstore.WriteTrustedRoot(t, vs, dir)
}

// signTimestamped signs snap with s's key, with an RFC 3161 timestamp of
// vs's authority over the signature: a verified signing time of now.
func (s signer) signTimestamped(t *testing.T, snap *digest.Snapshot, vs *ca.VirtualSigstore) []byte {
	t.Helper()
	payload := publisher.Statement(t, snap)
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, s.key, sgsign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tsr, err := vs.TimestampResponse(pb.GetDsseEnvelope().GetSignatures()[0].GetSig())
	if err != nil {
		t.Fatal(err)
	}
	pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}}}
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecideTimeAndLog: the entry's "maxBundleAge" against the bundle's
// verified signing time and the Decider's clock (the current time when it
// has none; a key identity has one when a timestamp is required), and
// "require" (docs/POLICY.md): a key identity required to
// have a log entry is refused a bundle without one, though it has a
// timestamp (only the sigstore method always needs one).
func TestDecideTimeAndLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vs, trusted := virtualRoot(t, dir)
	a := newSigner(t, dir, "a")
	snap := served()
	stamped, plain := a.signTimestamped(t, snap, vs), a.sign(t, snap)
	trust := `,"trust":{"trustedRoot":"` + trusted + `"}`

	// The signing time the timestamp gives, for the clocks of the rows.
	stampedTrust := trust + `,"defaults":{"require":["timestamp"]}`
	r := entry(t, dir, 1, stampedTrust, a)
	dec, err := policy.NewDecider(policy.DeciderOptions{}).Decide(context.Background(), r, [][]byte{stamped}, snap)
	if err != nil {
		t.Fatal(err)
	}
	signed := dec.First().SigningTime
	if signed.IsZero() || time.Since(signed) > time.Hour {
		t.Fatalf("signing time %v", signed)
	}
	at := func(d time.Duration) func() time.Time { return func() time.Time { return signed.Add(d) } }

	for _, c := range []struct {
		name     string
		defaults string
		now      func() time.Time // nil: the Decider's default, time.Now
		bundle   []byte
		step     verify.Step // "": the decision holds
		text     string
	}{
		{"signed within maxBundleAge, the current time", `"require":["timestamp"],"maxBundleAge":"1h"`, nil, stamped, "", ""},
		{"signed exactly maxBundleAge ago", `"require":["timestamp"],"maxBundleAge":"1h"`, at(time.Hour), stamped, "", ""},
		{"signed longer ago than maxBundleAge", `"require":["timestamp"],"maxBundleAge":"1h"`, at(time.Hour + time.Second), stamped, verify.StepTime, "maxBundleAge 1h0m0s: the bundle was signed 1h0m1s ago"},
		{"the Decider's clock, not the current time", `"require":["timestamp"],"maxBundleAge":"1h"`, at(48 * time.Hour), stamped, verify.StepTime, "was signed 48h0m0s ago"},
		{"maxBundleAge, no signing time", `"maxBundleAge":"1h"`, nil, plain, verify.StepTime, "the bundle has no verified signing time"},
		{"no maxBundleAge, an old bundle", `"require":["timestamp"]`, at(1000 * time.Hour), stamped, "", ""},
		{"a timestamp required, given", `"require":["timestamp"]`, nil, stamped, "", ""},
		{"a timestamp required, none", `"require":["timestamp"]`, nil, plain, verify.StepTime, ""},
		{"a log entry required of a key, none", `"require":["tlog"]`, nil, stamped, verify.StepTlog, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body := `{"kind":"mcpsign.policy","policyVersion":1` + trust + `,"defaults":{` + c.defaults + `},` +
				`"servers":{"notes":{"identities":[{"method":"key","key":"` + a.pem + `"}],"lock":"n.lock"}}}`
			r := resolveNotes(t, filepath.Join(t.TempDir(), "policy.json"), dir, body)
			dec, err := policy.NewDecider(policy.DeciderOptions{Now: c.now}).Decide(context.Background(), r, [][]byte{c.bundle}, snap)
			if c.step == "" {
				if err != nil || dec.Matched != 1 {
					t.Fatalf("matched %d: %v", dec.Matched, err)
				}
				return
			}
			var de *policy.DecisionError
			if !errors.As(err, &de) {
				t.Fatalf("error %v, want a *DecisionError", err)
			}
			if step, _ := verify.FailedStep(err); step != c.step {
				t.Errorf("step %q, want %q: %v", step, c.step, err)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q lacks %q", err, c.text)
			}
		})
	}
}
