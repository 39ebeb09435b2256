// Package virtualsigstore gives tests what sigstore-go's in-process
// Sigstore (pkg/testing/ca.VirtualSigstore) does not: a Rekor v1 log entry
// for a bundle signed under another CA, and its trusted root as a file.
// No stack is needed.
package virtualsigstore

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/proto"
)

// RekorEntry is a Rekor v1 dsse entry of vs for the envelope (payload
// signed by sig under leaf), with an inclusion proof and a signed entry
// timestamp, integrated a minute ago.
func RekorEntry(t testing.TB, vs *ca.VirtualSigstore, leaf *x509.Certificate, payloadType string, payload, sig []byte) *protorekor.TransparencyLogEntry {
	t.Helper()
	env := &dsse.Envelope{
		PayloadType: payloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures:  []dsse.Signature{{Sig: base64.StdEncoding.EncodeToString(sig)}},
	}
	integrated := time.Now().Add(-time.Minute)
	e, err := vs.GenerateTlogEntry(leaf, env, sig, integrated.Unix(), true)
	if err != nil {
		t.Fatal(err)
	}
	tle := proto.Clone(e.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	logID, err := vs.RekorLogID()
	if err != nil {
		t.Fatal(err)
	}
	set, err := vs.RekorSignPayload(tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: integrated.Unix(),
		LogIndex: tle.LogIndex, LogID: logID,
	})
	if err != nil {
		t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	if raw, _ := hex.DecodeString(logID); len(raw) > 0 {
		tle.LogId = &protocommon.LogId{KeyId: raw}
	}
	return tle
}

// WriteTrustedRoot writes vs's timestamp authorities and logs (not its
// CA) as dir/trusted_root.json, and returns its path.
func WriteTrustedRoot(t testing.TB, vs *ca.VirtualSigstore, dir string) string {
	t.Helper()
	// VirtualSigstore's logs hold their ID as the hex text of the key ID;
	// a trusted root holds the key ID itself.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		c := *l
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c.ID = raw
		logs[id] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
