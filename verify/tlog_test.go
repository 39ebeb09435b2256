package verify

import (
	"encoding/base64"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsign/mcpsign/digest"
)

// TestTlogEvidenceIsVerified: the log entry reported (and locked) is one
// that sigstore-go verifies, never the bundle's first entry from a trusted
// log: sigstore-go skips an entry whose signed entry timestamp fails.
func TestTlogEvidenceIsVerified(t *testing.T) {
	f := newFixture(t)
	const copiedIndex = 987654321
	// bogus is a copy of the real entry with another log index: its SET no
	// longer verifies (it covers the index), its inclusion proof still does
	// (it covers the proof's own index).
	bogus := func(real *protorekor.TransparencyLogEntry) *protorekor.TransparencyLogEntry {
		b := proto.Clone(real).(*protorekor.TransparencyLogEntry)
		b.LogIndex = copiedIndex
		b.InclusionPromise.SignedEntryTimestamp = []byte("garbage")
		return b
	}
	// resigned is the real entry with log index idx and a SET of the log
	// for it, and no inclusion proof.
	resigned := func(t *testing.T, real *protorekor.TransparencyLogEntry, idx int64) *protorekor.TransparencyLogEntry {
		e := proto.Clone(real).(*protorekor.TransparencyLogEntry)
		e.LogIndex = idx
		e.InclusionProof = nil
		logID, _ := f.vs.RekorLogID()
		set, err := f.vs.RekorSignPayload(tlog.RekorPayload{
			Body: base64.StdEncoding.EncodeToString(e.CanonicalizedBody), IntegratedTime: e.IntegratedTime,
			LogIndex: idx, LogID: logID,
		})
		if err != nil {
			t.Fatal(err)
		}
		e.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		return e
	}
	var realIndex int64
	build := func(edit func(t *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry) func(t *testing.T) (*Verifier, []byte, *digest.Snapshot) {
		return func(t *testing.T) (*Verifier, []byte, *digest.Snapshot) {
			b := certSigned(t, f.pki, f.vs, f.payload, certOpts{tlog: true, tsa: true, mutate: func(pb *protobundle.Bundle) {
				real := pb.VerificationMaterial.TlogEntries[0]
				realIndex = real.GetLogIndex()
				pb.VerificationMaterial.TlogEntries = edit(t, real)
			}})
			return f.certVerifier(t, Policy{RequireTlog: true}), b, f.snap
		}
	}
	evidence := func(t *testing.T, res *Result) {
		t.Helper()
		id, _ := f.vs.RekorLogID()
		if res.Tlog == nil || res.Tlog.LogIndex != realIndex || res.Tlog.LogID != id || res.Tlog.IntegratedTime == nil {
			t.Fatalf("evidence %+v, want the real entry (index %d, log %s) with its integrated time", res.Tlog, realIndex, id)
		}
	}
	runStepCases(t, []stepCase{
		{name: "real entry", check: evidence, build: build(func(_ *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{real}
		})},
		{name: "bogus first, then the real one", check: evidence, build: build(func(_ *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{bogus(real), real}
		})},
		{name: "real first, then bogus", check: evidence, build: build(func(_ *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{real, bogus(real)}
		})},
		{name: "lone bogus entry", step: StepTlog, substr: "not enough verified log entries", build: build(func(_ *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{bogus(real)}
		})},
		{name: "no SET: the index is vouched for by nothing", step: StepTlog, is: ErrLogIndex, substr: "needs its signed entry timestamp", build: build(func(_ *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			b := bogus(real)
			b.InclusionPromise = nil // sigstore-go verifies the proof only, not the index
			return []*protorekor.TransparencyLogEntry{b}
		})},
		{name: "signed index beyond 2^53-1", step: StepTlog, is: ErrLogIndex, substr: "9007199254740992 is more than 2^53-1", build: build(func(t *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{resigned(t, real, MaxLogIndex+1), real}
		})},
		{name: "signed index 2^53-1", build: build(func(t *testing.T, real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{resigned(t, real, MaxLogIndex), real}
		}), check: func(t *testing.T, res *Result) {
			if res.Tlog == nil || res.Tlog.LogIndex != MaxLogIndex {
				t.Fatalf("evidence %+v, want the first verified entry, index 2^53-1", res.Tlog)
			}
		}},
	})
}

// TestTlogEvidenceVerifiedFlag: tlogEvidence takes sigstore-go's own check
// of the bundle for its entry's only when the bundle has one entry (the
// entry sigstore-go verified); with several, each is verified on its own
// (a bogus entry first is skipped even when sigstore-go's check of the
// bundle passed). An integrated time is reported only when sigstore-go
// returned it as a verified log timestamp.
func TestTlogEvidenceVerifiedFlag(t *testing.T) {
	f := newFixture(t)
	v := f.certVerifier(t, Policy{RequireTlog: true})
	var real *protorekor.TransparencyLogEntry
	data := func(t *testing.T, entries func(real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry) *parsedBundle {
		b := certSigned(t, f.pki, f.vs, f.payload, certOpts{tlog: true, mutate: func(pb *protobundle.Bundle) {
			real = pb.VerificationMaterial.TlogEntries[0]
			pb.VerificationMaterial.TlogEntries = entries(real)
		}})
		pb, err := ParseBundle(b, false)
		if err != nil {
			t.Fatal(err)
		}
		return newParsedBundle(pb)
	}
	bogus := func(real *protorekor.TransparencyLogEntry) *protorekor.TransparencyLogEntry {
		b := proto.Clone(real).(*protorekor.TransparencyLogEntry)
		b.LogIndex = 987654321
		b.InclusionPromise.SignedEntryTimestamp = []byte("garbage")
		return b
	}
	logTime := func() []sgverify.TimestampVerificationResult {
		return []sgverify.TimestampVerificationResult{{Type: "Tlog", Timestamp: time.Unix(real.GetIntegratedTime(), 0)}}
	}
	for _, tc := range []struct {
		name     string
		entries  func(real *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry
		noTimes  bool // sigstore-go returned no verified log timestamp
		verified bool
		wantTime bool
	}{
		{name: "one entry, verified, its time returned", entries: func(r *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{r}
		}, verified: true, wantTime: true},
		{name: "one entry, verified, no time returned", entries: func(r *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{r}
		}, verified: true, noTimes: true},
		{name: "one entry, not verified, no time returned", entries: func(r *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{r}
		}, noTimes: true},
		{name: "bogus first, verified", entries: func(r *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{bogus(r), r}
		}, verified: true, wantTime: true},
		{name: "bogus first, not verified", entries: func(r *protorekor.TransparencyLogEntry) []*protorekor.TransparencyLogEntry {
			return []*protorekor.TransparencyLogEntry{bogus(r), r}
		}, wantTime: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := data(t, tc.entries)
			var ts []sgverify.TimestampVerificationResult
			if !tc.noTimes {
				ts = logTime()
			}
			ev, err := tlogEvidence(pb, v.trust, ts, tc.verified)
			if err != nil {
				t.Fatal(err)
			}
			if ev.LogIndex != real.GetLogIndex() {
				t.Errorf("evidence of log index %d, want the verified entry's %d", ev.LogIndex, real.GetLogIndex())
			}
			if (ev.IntegratedTime != nil) != tc.wantTime {
				t.Errorf("integrated time %v, want one: %v", ev.IntegratedTime, tc.wantTime)
			}
		})
	}
}
