package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// ptSigner is a key that signs the statement of a snapshot into bundles.
type ptSigner struct {
	kp  *sgsign.EphemeralKeypair
	pub string // PEM public key file
}

func newPTSigner(t *testing.T, dir, name string) *ptSigner {
	t.Helper()
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cryptoutils.MarshalPublicKeyToPEM(kp.GetPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return &ptSigner{kp: kp, pub: vtWrite(t, dir, name+".pub.pem", b)}
}

// sign writes a new bundle (a fresh signature: each call gives other bytes).
func (s *ptSigner) sign(t *testing.T, dir, name string, snap *digest.Snapshot) (path, bundleDigest string) {
	t.Helper()
	st, err := attest.Build(snap, attest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, s.kp, sgsign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return vtWrite(t, dir, name, data), "sha256:" + hex.EncodeToString(sum[:])
}

func (s *ptSigner) keyID(t *testing.T) string {
	id, err := verify.KeyID(s.kp.GetPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// ptPolicy writes a policy whose server "notes" lists the keys.
func ptPolicy(t *testing.T, dir, name string, threshold int, extra string, keys ...string) string {
	t.Helper()
	var ids []string
	for _, k := range keys {
		ids = append(ids, fmt.Sprintf(`{"method":"key","key":%q}`, filepath.Base(k)))
	}
	body := fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"identities":[%s],"threshold":%d%s}}%s}`,
		strings.Join(ids, ","), threshold, "", extra)
	return vtWrite(t, dir, name, []byte(body))
}

func TestVerifyPolicyThreshold(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	snapPath, snap := vtSnapshot(t, dir, "snap.json", nil)
	pub, org, third := newPTSigner(t, dir, "publisher"), newPTSigner(t, dir, "org"), newPTSigner(t, dir, "third")
	bPub, bPubDigest := pub.sign(t, dir, "publisher.sigstore.json", snap)
	bPub2, _ := pub.sign(t, dir, "publisher-again.sigstore.json", snap)
	bOrg, bOrgDigest := org.sign(t, dir, "org.sigstore.json", snap)
	// The publisher's key listed twice (two files): still one signer.
	twice := vtWrite(t, dir, "publisher-copy.pub.pem", mustRead(t, pub.pub))

	p2of3 := ptPolicy(t, dir, "p2of3.json", 2, "", pub.pub, org.pub, third.pub)
	pTwice := ptPolicy(t, dir, "ptwice.json", 2, "", pub.pub, twice)
	pOne := ptPolicy(t, dir, "pone.json", 1, "", pub.pub)
	pRevBundle := ptPolicy(t, dir, "prevb.json", 2, fmt.Sprintf(`,"revoked":{"bundles":[%q]}`, bOrgDigest), pub.pub, org.pub, third.pub)
	pRevID := ptPolicy(t, dir, "previd.json", 1, fmt.Sprintf(`,"revoked":{"identities":[%q]}`, pub.keyID(t)), pub.pub, org.pub)
	pFile := vtWrite(t, dir, "pfile.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"identities":[{"method":"key","key":"org.pub.pem"}],"bundle":"org.sigstore.json"}}}`))
	pNone := vtWrite(t, dir, "pnone.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{}}}`))
	pAge := vtWrite(t, dir, "page.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"identities":[{"method":"key","key":"org.pub.pem"}],"maxBundleAge":"1h"}}}`))

	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"2 of 3 with two signers", []string{"--policy", p2of3, "--bundle", bPub, "--bundle", bOrg}, 0,
			[]string{"VERIFIED notes", "2 of 3 distinct identities required, 2 signed"}},
		{"2 of 3 with one", []string{"--policy", p2of3, "--bundle", bPub}, 1,
			[]string{"policy threshold not met: 1 of the 3 listed identities", "1 distinct signer(s)"}},
		{"two bundles by one key count once", []string{"--policy", p2of3, "--bundle", bPub, "--bundle", bPub2}, 1,
			[]string{"policy threshold not met: 1 of the 3", "2 bundle(s), 1 distinct signer(s)"}},
		{"one key listed twice is refused", []string{"--policy", pTwice, "--bundle", bPub, "--bundle", bPub2}, 2,
			[]string{"/servers/notes/identities/1/key: duplicate: " + twice + " is the same key as /servers/notes/identities/0"}},
		{"a bundle no identity accepts", []string{"--policy", pOne, "--bundle", bPub, "--bundle", bOrg}, 1,
			[]string{"bundle 2 of 2", "FAILED at step signature"}},
		{"revoked bundle", []string{"--policy", pRevBundle, "--bundle", bPub, "--bundle", bOrg}, 1,
			[]string{fmt.Sprintf("revoked bundle %q", bOrgDigest)}},
		{"revoked identity", []string{"--policy", pRevID, "--bundle", bPub}, 1,
			[]string{fmt.Sprintf("revoked identity %q", pub.keyID(t))}},
		{"bundle from the policy", []string{"--policy", pFile}, 0, []string{"VERIFIED notes", "1 of 1 distinct identities required, 1 signed"}},
		{"no signing time for maxBundleAge", []string{"--policy", pAge, "--bundle", bOrg}, 1, []string{"FAILED at step time", "maxBundleAge 1h0m0s: the bundle has no verified signing time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"verify", snapPath, "--name", "notes"}, tt.args...)
			code, out, stderr := runCLI(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+stderr, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, out, stderr)
				}
			}
		})
	}
	_ = bPubDigest

	usage := []struct {
		name string
		args []string
		want string
	}{
		{"identity flag with a policy", []string{"--policy", p2of3, "--name", "notes", "--bundle", bPub, "--key", pub.pub}, "--key and --policy"},
		{"trust flag with a policy", []string{"--policy", p2of3, "--name", "notes", "--bundle", bPub, "--trusted-root", "x.json"}, "--trusted-root and --policy"},
		{"no --name", []string{"--policy", p2of3, "--bundle", bPub}, "--policy needs --name"},
		{"--name alone", []string{"--name", "notes", "--bundle", bPub, "--key", pub.pub}, "--name is the server's name in a --policy file"},
		{"unknown server", []string{"--policy", p2of3, "--name", "other", "--bundle", bPub}, `no such server in the policy: "other"`},
		{"no identity", []string{"--policy", pNone, "--name", "notes", "--bundle", bPub}, `add "identities" to servers.notes`},
		{"two bundles without a policy", []string{"--bundle", bPub, "--bundle", bOrg, "--key", pub.pub}, "--bundle given 2 times"},
	}
	for _, tt := range usage {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"verify", "key", snapPath}, tt.args...)
			code, out, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want 2 and %q", code, stderr, out, tt.want)
			}
		})
	}

	// --write-lock under a policy records the first bundle's evidence.
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "verify", snapPath, "--policy", p2of3, "--name", "notes", "--bundle", bOrg, "--bundle", bPub, "--write-lock", lock); code != 0 {
		t.Fatalf("--write-lock: exit %d\n%s\n%s", code, out, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	if l.Approval.Identity != org.keyID(t) || l.Approval.BundleDigest != bOrgDigest {
		t.Errorf("lock approval %+v", l.Approval)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signWith writes a bundle of the statement of snap signed by s's key
// under the certificate der (an enterprise CA's leaf for that key).
func (s *ptSigner) signWith(t *testing.T, dir, name string, snap *digest.Snapshot, der []byte) string {
	t.Helper()
	st, err := attest.Build(snap, attest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, s.kp, sgsign.BundleOptions{CertificateProvider: vtCert{der}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return vtWrite(t, dir, name, data)
}

// TestVerifyPolicyThresholdOneKey: a threshold counts private keys, not
// identities: one key that signs as a listed key and under a certificate
// of another listed identity, or under two certificates of two listed
// identities, is one signer.
func TestVerifyPolicyThresholdOneKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	snapPath, snap := vtSnapshot(t, dir, "snap.json", nil)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Corp Root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	vtWrite(t, dir, "roots.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	serial := int64(1)
	leaf := func(s *ptSigner, cn string) []byte {
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"Corp"}}, EmailAddresses: []string{cn + "@corp.example"},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, s.kp.GetPublicKey(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	one, other := newPTSigner(t, dir, "one"), newPTSigner(t, dir, "other")
	keyBundle, _ := one.sign(t, dir, "one-key.sigstore.json", snap)
	otherKeyBundle, _ := other.sign(t, dir, "other-key.sigstore.json", snap)
	releaseCert := one.signWith(t, dir, "one-release.sigstore.json", snap, leaf(one, "release"))
	opsCert := one.signWith(t, dir, "one-ops.sigstore.json", snap, leaf(one, "ops"))
	otherOpsCert := other.signWith(t, dir, "other-ops.sigstore.json", snap, leaf(other, "ops"))

	policyOf := func(name string, ids ...string) string {
		return vtWrite(t, dir, name, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"caRoots":"roots.pem"},"servers":{"notes":{"identities":[`+
			strings.Join(ids, ",")+`],"threshold":2}}}`))
	}
	release := `{"method":"certificate","subject":"CN=release,O=Corp"}`
	ops := `{"method":"certificate","subject":"CN=ops,O=Corp"}`
	certAndKey := policyOf("cert-key.json", release, `{"method":"key","key":"one.pub.pem"}`)
	twoCerts := policyOf("two-certs.json", release, ops)
	opsAndOther := policyOf("ops-other.json", ops, `{"method":"key","key":"other.pub.pem"}`)
	// A revoked key approves nothing, in a certificate either; a revoked
	// identity nothing, even when another listed one matched first.
	revokedOf := func(name, revoked string, ids ...string) string {
		return vtWrite(t, dir, name, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"caRoots":"roots.pem"},"servers":{"notes":{"identities":[`+
			strings.Join(ids, ",")+`]}},"revoked":{"identities":[`+revoked+`]}}`))
	}
	keyRevoked := revokedOf("key-revoked.json", fmt.Sprintf("%q", one.keyID(t)), release)
	subjectRevoked := revokedOf("subject-revoked.json", `"CN=release,O=Corp"`, `{"method":"certificate","email":"release@corp.example"}`)
	otherRevoked := revokedOf("other-revoked.json", fmt.Sprintf("%q", other.keyID(t)), release)

	for _, tc := range []struct {
		name    string
		policy  string
		bundles []string
		code    int
		want    string
	}{
		{"a key and a certificate of that key", certAndKey, []string{keyBundle, releaseCert}, 1,
			"policy threshold not met: 1 of the 2 listed identities signed these definitions as distinct signers, 2 required (2 bundle(s), 1 distinct signer(s)"},
		{"two certificates of one key", twoCerts, []string{releaseCert, opsCert}, 1,
			"policy threshold not met: 1 of the 2 listed identities signed these definitions as distinct signers, 2 required (2 bundle(s), 1 distinct signer(s)"},
		{"a certificate and another key", opsAndOther, []string{opsCert, otherKeyBundle}, 0,
			"2 of 2 distinct identities required, 2 signed"},
		{"a certificate and a key of the same other signer", opsAndOther, []string{otherOpsCert, otherKeyBundle}, 1,
			"1 distinct signer(s)"},
		{"a certificate of a revoked key", keyRevoked, []string{releaseCert}, 1,
			fmt.Sprintf("revoked identity %q", one.keyID(t))},
		{"the revoked subject of a certificate matched by its e-mail", subjectRevoked, []string{releaseCert}, 1,
			`revoked identity "CN=release,O=Corp"`},
		{"another key revoked", otherRevoked, []string{releaseCert}, 0, "VERIFIED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"verify", "certificate", snapPath, "--policy", tc.policy, "--name", "notes", "--allow-current-time"}
			for _, b := range tc.bundles {
				args = append(args, "--bundle", b)
			}
			code, out, stderr := runCLI(t, args...)
			if code != tc.code || !strings.Contains(out+stderr, tc.want) {
				t.Errorf("exit %d, want %d and %q:\n%s\n%s", code, tc.code, tc.want, out, stderr)
			}
		})
	}
}
