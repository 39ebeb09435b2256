package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
	"github.com/mcpsign/mcpsign/internal/testkit/virtualsigstore"
	"github.com/mcpsign/mcpsign/trustroot"
)

// exampleSnapshot is the small server of internal/testkit/fixtures/testsnap.
func exampleSnapshot() *digest.Snapshot { return testsnap.Example() }

// clone deep-copies a snapshot so that a test can change it.
func clone(s *digest.Snapshot) *digest.Snapshot {
	c := *s
	for _, k := range digest.Kinds {
		c.SetDefinitions(k, append([]json.RawMessage(nil), s.Definitions(k)...))
	}
	if s.Instructions != nil {
		ins := *s.Instructions
		c.Instructions = &ins
	}
	return &c
}

// statementOf returns the signed payload of a snapshot's statement.
func statementOf(t testing.TB, s *digest.Snapshot, opts attest.Options) []byte {
	t.Helper()
	st, err := attest.Build(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixSets recomputes the predicate's Set Digests from the subjects of a
// statement in its JSON form, as a signer forging names would.
func fixSets(m map[string]any) {
	pairs := map[digest.Kind][]digest.KeyDigest{}
	for _, s := range m["subject"].([]any) {
		sub := s.(map[string]any)
		if k, key, ok := attest.ParseSubjectName(sub["name"].(string)); ok {
			pairs[k] = append(pairs[k], digest.KeyDigest{Key: key, Digest: digest.Prefix + sub["digest"].(map[string]any)["sha256"].(string)})
		}
	}
	sets := m["predicate"].(map[string]any)["sets"].(map[string]any)
	for _, k := range digest.Kinds {
		sets[k.ListMember()] = digest.SetDigest(pairs[k])
	}
}

// editStatement builds the statement of s, lets edit change its JSON form
// (a map), and returns the payload: for statements that attest.Build would
// never produce.
func editStatement(t testing.TB, s *digest.Snapshot, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(statementOf(t, s, attest.Options{}), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marshalBundle(t testing.TB, pb *protobundle.Bundle) []byte {
	t.Helper()
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseProto(t testing.TB, data []byte) *protobundle.Bundle {
	t.Helper()
	pb := new(protobundle.Bundle)
	if err := protojson.Unmarshal(data, pb); err != nil {
		t.Fatal(err)
	}
	return pb
}

// keySigned signs payload as a DSSE envelope of payloadType with a fresh
// ECDSA P-256 key (sigstore-go's signer, no log, no timestamp).
func keySigned(t testing.TB, payload []byte, payloadType string) (*protobundle.Bundle, crypto.PublicKey) {
	t.Helper()
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: payloadType}, kp, sgsign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pb, kp.GetPublicKey()
}

// testPKI is an enterprise CA (internal/testkit/fixtures/testpki): a root and an
// intermediate.
type testPKI struct {
	root, inter       *x509.Certificate
	rootKey, interKey *ecdsa.PrivateKey
}

func newPKI(t testing.TB, name string) *testPKI {
	t.Helper()
	ca := testpki.New(t, testpki.Names{Organization: "Example Corp", Root: name + " Root", Intermediate: name + " Signing CA"})
	return &testPKI{root: ca.Root, inter: ca.Intermediate, rootKey: ca.RootKey, interKey: ca.IntermediateKey}
}

// leafTemplate is a code signing certificate for release@example.com.
func leafTemplate(t testing.TB) *x509.Certificate {
	t.Helper()
	return testpki.CodeSigningLeaf(t, "MCP Release Signing", "Example Corp", "release@example.com")
}

func (p *testPKI) issue(t testing.TB, pub crypto.PublicKey, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	return testpki.Create(t, tmpl, p.inter, pub, p.interKey)
}

func (p *testPKI) authorities(t testing.TB) []root.CertificateAuthority {
	t.Helper()
	return pkiAuthorities(t, p.root, p.inter)
}

// pkiAuthorities builds Trust.CertificateAuthorities as a host does, with
// trustroot.LoadPKI: one root, and the intermediate when not nil.
func pkiAuthorities(t testing.TB, rootCert, inter *x509.Certificate) []root.CertificateAuthority {
	t.Helper()
	pemOf := func(c *x509.Certificate) []byte {
		if c == nil {
			return nil
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	tm, err := trustroot.LoadPKI(pemOf(rootCert), pemOf(inter))
	if err != nil {
		t.Fatal(err)
	}
	return tm.FulcioCertificateAuthorities()
}

type staticCert struct{ der []byte }

func (s staticCert) GetCertificate(context.Context, sgsign.Keypair, *sgsign.CertificateProviderOptions) ([]byte, error) {
	return s.der, nil
}

// certOpts say what a certificate-signed test bundle carries.
type certOpts struct {
	payloadType string                    // default in-toto
	leaf        func(*x509.Certificate)   // edits the leaf template
	tsa         bool                      // an RFC 3161 timestamp from vs
	tlog        bool                      // a Rekor v1 dsse entry of vs, with SET and inclusion proof
	tlogFrom    []byte                    // take the log entry of this other bundle
	pki         *testPKI                  // issuer; default the shared one
	mutate      func(*protobundle.Bundle) // last edit of the bundle
}

// certSigned signs payload with a leaf of p (sigstore-go's signer), and
// adds a timestamp and a log entry from the virtual Sigstore vs.
func certSigned(t testing.TB, p *testPKI, vs *ca.VirtualSigstore, payload []byte, o certOpts) []byte {
	t.Helper()
	if o.payloadType == "" {
		o.payloadType = attest.PayloadType
	}
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := leafTemplate(t)
	if o.leaf != nil {
		o.leaf(tmpl)
	}
	leaf := p.issue(t, kp.GetPublicKey(), tmpl)
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: o.payloadType}, kp,
		sgsign.BundleOptions{CertificateProvider: staticCert{leaf.Raw}})
	if err != nil {
		t.Fatal(err)
	}
	sig := pb.GetDsseEnvelope().GetSignatures()[0].GetSig()
	if o.tsa {
		tsr, err := vs.TimestampResponse(sig)
		if err != nil {
			t.Fatal(err)
		}
		pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}},
		}
	}
	if o.tlog {
		pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{rekorEntry(t, vs, leaf, o.payloadType, payload, sig)}
	}
	if o.tlogFrom != nil {
		pb.VerificationMaterial.TlogEntries = parseProto(t, o.tlogFrom).GetVerificationMaterial().GetTlogEntries()
	}
	if o.mutate != nil {
		o.mutate(pb)
	}
	return marshalBundle(t, pb)
}

// rekorEntry is a Rekor v1 dsse entry of vs for the envelope, with an
// inclusion proof and a signed entry timestamp.
func rekorEntry(t testing.TB, vs *ca.VirtualSigstore, leaf *x509.Certificate, payloadType string, payload, sig []byte) *protorekor.TransparencyLogEntry {
	t.Helper()
	return virtualsigstore.RekorEntry(t, vs, leaf, payloadType, payload, sig)
}

// virtualAttest is a bundle of vs's own DSSE attestation: a leaf of its
// Fulcio-like CA (no SCT), a Rekor v1 dsse entry with SET and inclusion
// proof, and a timestamp.
func virtualAttest(t testing.TB, vs *ca.VirtualSigstore, identity, issuer string, payload []byte) []byte {
	t.Helper()
	ent, err := vs.AttestAtTime(identity, issuer, payload, time.Now().Add(time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ent.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.EnvelopeContent().RawEnvelope()
	vc, _ := ent.VerificationContent()
	entries, _ := ent.TlogEntries()
	tss, _ := ent.Timestamps()
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	tle := proto.Clone(entries[0].TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	logID, _ := vs.RekorLogID()
	set, err := vs.RekorSignPayload(tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
		LogIndex: tle.LogIndex, LogID: logID,
	})
	if err != nil {
		t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:     &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries: []*protorekor.TransparencyLogEntry{tle},
			TimestampVerificationData: &protobundle.TimestampVerificationData{
				Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tss[0]}},
			},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	}
	return marshalBundle(t, pb)
}
