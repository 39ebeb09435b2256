package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"one key listed twice counts once", []string{"--policy", pTwice, "--bundle", bPub, "--bundle", bPub2}, 1,
			[]string{"policy threshold not met: 1 of the 2"}},
		{"a bundle no identity accepts", []string{"--policy", pTwice, "--bundle", bPub, "--bundle", bOrg}, 1,
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
