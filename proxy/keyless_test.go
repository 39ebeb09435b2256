package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// signKeyless signs snap as email through the local Sigstore stack (Fulcio,
// Rekor v2, TSA) and writes the bundle to path.
func signKeyless(t *testing.T, env *sigstack.Env, trusted *root.TrustedRoot, snap *digest.Snapshot, email, path string) {
	t.Helper()
	sc, err := root.NewSigningConfigFromPath(env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sign.SelectServices(sc, sign.ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sign.IDToken(context.Background(), sign.TokenOptions{Flag: env.FreshToken(t, email)})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.NewSigstoreSigner(tok, svc.FulcioURL)
	if err != nil {
		t.Fatal(err)
	}
	payload := publisher.Statement(t, snap)
	res, err := sign.Sign(context.Background(), payload, sign.Options{
		Signer: signer, TransparencyLogs: svc.TransparencyLogs, TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: trusted,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, res.Bundle, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKeylessUpdateByAnotherIdentityBlocks: the host's policy admits any
// identity of the domain, but the lock records who signed first: an update
// signed by another identity of the domain verifies and is still blocked;
// one by the recorded identity rolls the lock forward. Needs the local
// Sigstore stack.
func TestKeylessUpdateByAnotherIdentityBlocks(t *testing.T) {
	env := sigstack.Require(t)
	ctx := testContext(t)
	trusted, err := trustroot.LoadTrustedRootFile(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Trust{Sigstore: trusted}, verify.Policy{
		Method:     verify.MethodSigstore,
		Identities: []verify.Identity{{SANRegexp: `.*@example\.com`, Issuer: env.OIDCIssuer}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	bundle := filepath.Join(dir, "server.sigstore.json")
	honest := snapshotOf(t, exampleArgv(t, fixtures.ModeHonest))
	rugpull := snapshotOf(t, exampleArgv(t, fixtures.ModeRugPull))

	signKeyless(t, env, trusted, honest, "release@example.com", bundle)
	s := startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(v, bundle)}), exampleArgv(t, fixtures.ModeHonest), nil)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("signed first use: %v", err)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	first, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	if first.Approval.Method != verify.MethodSigstore || first.Approval.Identity != "release@example.com" ||
		first.Approval.Issuer != env.OIDCIssuer || first.Approval.Tlog == nil {
		t.Fatalf("approval %+v", first.Approval)
	}

	signKeyless(t, env, trusted, rugpull, "intern@example.com", bundle)
	s = startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(v, bundle)}), exampleArgv(t, fixtures.ModeRugPull), nil)
	if _, err := s.connect(ctx, "", nil); !isBlocked(err) {
		t.Fatalf("update by another identity: %v, want the block error", err)
	}
	if b := asBlocked(s.wait()); b == nil || !b.Drift() {
		t.Fatalf("Run: %v, want a drift block", b)
	}
	if !strings.Contains(s.stderr.String(), "another signer") || !strings.Contains(s.stderr.String(), "intern@example.com") {
		t.Errorf("the report does not name the other signer:\n%s", s.stderr.String())
	}
	if l, err := pin.Read(lock); err != nil || l.LockDigest != first.LockDigest {
		t.Fatalf("the lock changed: %v", err)
	}

	signKeyless(t, env, trusted, rugpull, "release@example.com", bundle)
	s = startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(v, bundle)}), exampleArgv(t, fixtures.ModeRugPull), nil)
	cs, err = s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("update by the recorded identity: %v", err)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if l, err := pin.Read(lock); err != nil || l.LockDigest == first.LockDigest {
		t.Errorf("the lock was not rolled forward: %v", err)
	}
}
