package verify

import (
	"context"
	"regexp"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/source"
)

// stackSign signs payload keylessly with the local Sigstore stack (Fulcio,
// Rekor v2, TSA) as email, with sigstore-go's signer.
func stackSign(t testing.TB, env *sigstack.Env, email string, payload []byte) *protobundle.Bundle {
	t.Helper()
	tr, err := root.NewTrustedRootFromPath(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, kp, sgsign.BundleOptions{
		CertificateProvider:        sgsign.NewFulcio(&sgsign.FulcioOptions{BaseURL: env.FulcioURL}),
		CertificateProviderOptions: &sgsign.CertificateProviderOptions{IDToken: env.FreshToken(t, email)},
		TimestampAuthorities:       []*sgsign.TimestampAuthority{sgsign.NewTimestampAuthority(&sgsign.TimestampAuthorityOptions{URL: env.TSAURL})},
		TransparencyLogs:           []sgsign.Transparency{sgsign.NewRekor(&sgsign.RekorOptions{BaseURL: env.RekorURL, Version: 2})},
		Context:                    ctx,
		TrustedRoot:                tr, // sigstore-go verifies the new bundle
	})
	if err != nil {
		t.Fatalf("signing with the local stack: %v", err)
	}
	return pb
}

func loadExample(t testing.TB, bin, mode string) *digest.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := source.Load(ctx, source.Spec{Command: []string{bin, "--mode", mode}}, source.Options{})
	if err != nil {
		t.Fatalf("listing the example server (%s): %v", mode, err)
	}
	return snap
}

// TestKeylessEndToEnd signs the example server's definitions with the local
// Sigstore stack, then verifies with nothing but the bundle and the stack's
// trusted_root.json (verification does no network I/O), against the live
// server honest and rug-pulled.
func TestKeylessEndToEnd(t *testing.T) {
	env := sigstack.Require(t)
	bin := fixtures.BuildExampleServer(t)
	honest := loadExample(t, bin, fixtures.ModeHonest)
	payload := statementOf(t, honest, attest.Options{})
	const signer = "publisher@example.com"
	b := marshalBundle(t, stackSign(t, env, signer, payload))

	tr, err := root.NewTrustedRootFromPath(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p Policy) *Verifier { return mustVerifier(t, Trust{Sigstore: tr}, p) }
	ctx := context.Background()

	v := mk(sigstorePolicy(signer, env.OIDCIssuer))
	res, err := v.Verify(ctx, b, loadExample(t, bin, fixtures.ModeHonest))
	if err != nil {
		t.Fatalf("honest server: %v", err)
	}
	if res.Identity != signer || res.Issuer != env.OIDCIssuer || res.Tlog == nil || res.TimeSource != "TimestampAuthority" {
		t.Errorf("result %+v", res)
	}
	if res.Tlog != nil && res.Tlog.IntegratedTime != nil {
		t.Error("Rekor v2 has no integrated time")
	}
	if n := len(res.Definitions); n != len(fixtures.HonestToolNames())+len(fixtures.PromptNames())+len(fixtures.ResourceTemplateURIs()) {
		t.Errorf("%d rows", n)
	}
	if _, err := mk(Policy{Method: MethodSigstore, Identities: []Identity{{SAN: signer, Issuer: env.OIDCIssuer}}, RequireTimestamp: true}).Verify(ctx, b, honest); err != nil {
		t.Errorf("timestamp required: %v", err)
	}

	res, err = v.Verify(ctx, b, loadExample(t, bin, fixtures.ModeRugPull))
	if step, _ := FailedStep(err); step != StepMatch {
		t.Fatalf("rug-pulled server: %v", err)
	}
	got := rowsByStatus(res)
	if len(got[StatusChanged]) == 0 || len(got[StatusExtra]) == 0 {
		t.Errorf("rug pull rows %v", got)
	}

	for _, tc := range []struct {
		name string
		p    Policy
	}{
		{"wrong identity", sigstorePolicy("someone@example.com", env.OIDCIssuer)},
		{"wrong issuer", sigstorePolicy(signer, "https://accounts.google.com")},
		{"identity regexp of a prefix", Policy{Method: MethodSigstore, Identities: []Identity{{SANRegexp: "publisher", Issuer: env.OIDCIssuer}}}},
		{"issuer regexp of a prefix", Policy{Method: MethodSigstore, Identities: []Identity{{SAN: signer, IssuerRegexp: "http://127"}}}},
		{"two identities, neither", Policy{Method: MethodSigstore, Identities: []Identity{{SAN: "someone@example.com", Issuer: env.OIDCIssuer}, {SAN: signer, Issuer: "https://accounts.google.com"}}}},
	} {
		if _, err := mk(tc.p).Verify(ctx, b, honest); !isStep(err, StepIdentity) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// Several identities, any of them: the second one matches, and the
	// sigstore-go result reports it.
	two := mk(Policy{Method: MethodSigstore, Identities: []Identity{{SAN: "someone@example.com", Issuer: env.OIDCIssuer}, {SAN: signer, Issuer: env.OIDCIssuer}}})
	if res, err := two.Verify(ctx, b, honest); err != nil || len(res.MatchedIdentities) != 1 || res.MatchedIdentities[0] != 1 ||
		res.Identity != signer || res.Sigstore.VerifiedIdentity == nil || res.Sigstore.VerifiedIdentity.SubjectAlternativeName.SubjectAlternativeName != signer {
		t.Errorf("two identities: %v %+v", err, res)
	}

	// Tampered payload: the Rekor v2 entry commits to the signature over
	// the original PAE.
	pb := parseProto(t, b)
	pb.GetDsseEnvelope().Payload = statementOf(t, loadExample(t, bin, fixtures.ModeRugPull), attest.Options{})
	if _, err := v.Verify(ctx, marshalBundle(t, pb), honest); !isStep(err, StepTlog) {
		t.Errorf("tampered payload: %v", err)
	}
	// Another trusted root (the public-good one) does not trust the stack.
	if _, err := mustVerifier(t, Trust{Sigstore: productionRoot(t)}, sigstorePolicy(signer, env.OIDCIssuer)).Verify(ctx, b, honest); err == nil {
		t.Error("verified under the wrong trusted root")
	}
}

// TestKeylessUnanchoredRegexpTrick: an identity regexp that would match
// inside a longer SAN must not match it.
func TestKeylessUnanchoredRegexpTrick(t *testing.T) {
	env := sigstack.Require(t)
	snap := exampleSnapshot()
	b := marshalBundle(t, stackSign(t, env, "evil-alice@example.com.attacker", statementOf(t, snap, attest.Options{})))
	tr, err := root.NewTrustedRootFromPath(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		re, issuerRe string
		ok           bool
	}{
		{"alice@example.com", "", false},
		{`alice@example\.com`, "", false},
		{"alice@example.com", regexp.QuoteMeta(env.OIDCIssuer), false},
		{`.*alice@example\.com\.attacker`, "", true},
		{`evil-alice@example\.com\.attacker`, `http://127\.0\.0\.1:\d+`, true},
	} {
		id := Identity{SANRegexp: tc.re, Issuer: env.OIDCIssuer}
		if tc.issuerRe != "" {
			id.Issuer, id.IssuerRegexp = "", tc.issuerRe
		}
		_, err := mustVerifier(t, Trust{Sigstore: tr}, Policy{Method: MethodSigstore, Identities: []Identity{id}}).Verify(context.Background(), b, snap)
		if tc.ok && err != nil {
			t.Errorf("%q: %v", tc.re, err)
		}
		if !tc.ok && !isStep(err, StepIdentity) {
			t.Errorf("%q matched evil-alice@example.com.attacker: %v", tc.re, err)
		}
	}
}

func isStep(err error, s Step) bool {
	got, ok := FailedStep(err)
	return ok && got == s
}
