package sign

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/trustroot"
)

// These tests sign against the local Sigstore stack
// (scripts/sigstore-local/start.sh); they skip without it unless
// MCPSIGN_REQUIRE_SIGSTACK=1.

// stackTrust is the stack's trusted root and signing config.
type stackTrustFiles struct {
	TrustedRoot   *root.TrustedRoot
	SigningConfig *root.SigningConfig
}

func stackTrust(t *testing.T, env *sigstack.Env) *stackTrustFiles {
	t.Helper()
	tr, err := trustroot.LoadTrustedRootFile(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := root.NewSigningConfigFromPath(env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &stackTrustFiles{TrustedRoot: tr, SigningConfig: sc}
}

func TestStackKeyless(t *testing.T) {
	env := sigstack.Require(t)
	trust := stackTrust(t, env)
	payload, _ := examplePayload(t)
	svc, err := SelectServices(trust.SigningConfig, ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if svc.OIDCIssuer != env.OIDCIssuer || len(svc.TimestampAuthorities) != 1 || len(svc.TransparencyLogs) != 1 || svc.TransparencyLogs[0].Version != 2 {
		t.Fatalf("services %+v", svc)
	}
	email := "keyless-test@example.com"
	tok, err := IDToken(context.Background(), TokenOptions{Flag: env.FreshToken(t, email)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigstoreSigner(tok, svc.FulcioURL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sign(context.Background(), payload, Options{
		Signer: s, TransparencyLogs: svc.TransparencyLogs, TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: trust.TrustedRoot,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Identity.SAN != email || res.Identity.Issuer != env.OIDCIssuer {
		t.Errorf("identity %+v", res.Identity)
	}
	// A Rekor v2 entry with an inclusion proof, and a TSA timestamp.
	if len(res.TlogEntries) != 1 || !res.TlogEntries[0].InclusionProof || res.TlogEntries[0].Kind != "hashedrekord 0.0.2" {
		t.Errorf("tlog %+v", res.TlogEntries)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(res.Bundle); err != nil {
		t.Fatal(err)
	}
	vm := b.GetVerificationMaterial()
	if len(vm.GetTlogEntries()) != 1 || vm.GetTlogEntries()[0].GetInclusionProof() == nil || vm.GetTlogEntries()[0].GetInclusionProof().GetCheckpoint() == nil {
		t.Error("no inclusion proof with checkpoint in the bundle")
	}
	if len(vm.GetTimestampVerificationData().GetRfc3161Timestamps()) != 1 {
		t.Error("no RFC 3161 timestamp in the bundle")
	}
	if len(res.Timestamps) != 1 || res.Timestamps[0].Kind != "tsa" || time.Since(res.Timestamps[0].Time) > time.Minute {
		t.Errorf("timestamps %+v", res.Timestamps)
	}
	if res.Timings.Fulcio <= 0 || res.Timings.Rekor <= 0 || res.Timings.TSA <= 0 {
		t.Errorf("timings %+v", res.Timings)
	}

	// Independently: the policy a host would use.
	id, err := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", email, "")
	if err != nil {
		t.Fatal(err)
	}
	verifyIndependently(t, res.Bundle, payload, trust.TrustedRoot, verify.WithCertificateIdentity(id),
		verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1), verify.WithSignedCertificateTimestamps(1))
	// Another identity does not pass.
	wrong, _ := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", "mallory@example.com", "")
	v, _ := verify.NewVerifier(trust.TrustedRoot, verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1))
	if _, err := v.Verify(&b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(wrong))); err == nil {
		t.Error("verified for another identity")
	}
}

func TestStackKeylessFailures(t *testing.T) {
	env := sigstack.Require(t)
	trust := stackTrust(t, env)
	payload, _ := examplePayload(t)
	svc, err := SelectServices(trust.SigningConfig, ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	good := env.FreshToken(t, "fail-test@example.com")
	dead := "http://" + closedPort(t)

	tests := []struct {
		name     string
		clientID string
		token    string
		fulcio   string
		logs     []RekorService
		tsas     []string
		service  string
		msg      string
	}{
		{name: "Fulcio unreachable", fulcio: dead, service: ServiceFulcio, msg: "connection refused"},
		{name: "Rekor unreachable", logs: []RekorService{{URL: dead, Version: 2}}, service: ServiceRekor, msg: "connection refused"},
		{name: "TSA unreachable", tsas: []string{dead + "/api/v1/timestamp"}, service: ServiceTSA, msg: "connection refused"},
		// A token for another audience that mcpsign is told to accept:
		// Fulcio itself refuses it.
		{name: "Fulcio refuses the audience", clientID: "other", token: mintStack(t, env, "aud-test@example.com", "other"), service: ServiceFulcio, msg: "identity token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := good
			if tt.token != "" {
				raw = tt.token
			}
			tok, err := IDToken(context.Background(), TokenOptions{Flag: raw, ClientID: tt.clientID})
			if err != nil {
				t.Fatal(err)
			}
			fulcio := svc.FulcioURL
			if tt.fulcio != "" {
				fulcio = tt.fulcio
			}
			s, _ := NewSigstoreSigner(tok, fulcio)
			opts := Options{Signer: s, TransparencyLogs: svc.TransparencyLogs, TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: trust.TrustedRoot}
			if tt.logs != nil {
				opts.TransparencyLogs = tt.logs
			}
			if tt.tsas != nil {
				opts.TimestampAuthorities = tt.tsas
			}
			res, err := Sign(context.Background(), payload, opts)
			var se *ServiceError
			if res != nil || !errors.As(err, &se) || se.Service != tt.service {
				t.Fatalf("want a %s error, got %v", tt.service, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%q does not say %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), raw) {
				t.Error("the token leaked into the error")
			}
		})
	}

	// Without telling mcpsign, a wrong-audience token is refused before
	// any service is contacted.
	_, err = IDToken(context.Background(), TokenOptions{Flag: mintStack(t, env, "aud-test@example.com", "other")})
	if !errors.Is(err, ErrTokenAudience) {
		t.Fatalf("wrong audience: %v", err)
	}
}

// mintStack gets a token for email and audience aud from the stack's
// issuer (sigstack.FreshToken always asks for aud=sigstore).
func mintStack(t *testing.T, env *sigstack.Env, email, aud string) string {
	t.Helper()
	u, err := url.Parse(env.OIDCTokenURL)
	if err != nil || env.OIDCTokenURL == "" {
		t.Skip("this stack cannot mint tokens")
	}
	q := u.Query()
	q.Set("email", email)
	q.Set("aud", aud)
	u.RawQuery = q.Encode()
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token endpoint: %s", resp.Status)
	}
	return strings.TrimSpace(string(b))
}

func TestStackKeyAndCertificateWithServices(t *testing.T) {
	env := sigstack.Require(t)
	trust := stackTrust(t, env)
	payload, _ := examplePayload(t)
	svc, err := SelectServices(trust.SigningConfig, ServiceNeeds{Rekor: true, TSA: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := LoadPrivateKey(readKey(t, "ec-p384-pkcs8-pbkdf2.pem"), StaticPassword([]byte(testPassword)))
	ks, _ := NewKeySigner(key)
	hint, _ := KeyHint(key.Public())

	t.Run("key, Rekor v2 and TSA", func(t *testing.T) {
		res, err := Sign(context.Background(), payload, Options{Signer: ks, TransparencyLogs: svc.TransparencyLogs, TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: trust.TrustedRoot})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.TlogEntries) != 1 || len(res.Timestamps) != 1 {
			t.Fatalf("%+v", res)
		}
		tm := root.TrustedMaterialCollection{trust.TrustedRoot, keyMaterial(t, key.Public(), hint)}
		verifyIndependently(t, res.Bundle, payload, tm, verify.WithKey(), verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1))
	})
	t.Run("key, Rekor v2 only", func(t *testing.T) {
		res, err := Sign(context.Background(), payload, Options{Signer: ks, TransparencyLogs: svc.TransparencyLogs, TrustedMaterial: trust.TrustedRoot})
		if err != nil {
			t.Fatal(err)
		}
		tm := root.TrustedMaterialCollection{trust.TrustedRoot, keyMaterial(t, key.Public(), hint)}
		verifyIndependently(t, res.Bundle, payload, tm, verify.WithKey(), verify.WithTransparencyLog(1), verify.WithNoObserverTimestamps())
	})
	t.Run("certificate and TSA", func(t *testing.T) {
		pki := newTestPKI(t)
		ck := mustECKey(t)
		cs, err := NewCertificateSigner(ck, pki.leaf(t, ck.Public(), codeSigningLeaf()), nil, nil, time.Now())
		if err == nil {
			t.Fatal("a leaf without chain or roots was accepted")
		}
		cs, err = NewCertificateSigner(ck, pki.leaf(t, ck.Public(), codeSigningLeaf()), []*x509.Certificate{pki.inter, pki.root}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		res, err := Sign(context.Background(), payload, Options{Signer: cs, TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: trust.TrustedRoot})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Timestamps) != 1 || res.Timestamps[0].Kind != "tsa" {
			t.Fatalf("%+v", res.Timestamps)
		}
		tm := root.TrustedMaterialCollection{trust.TrustedRoot, cs.trustedCA()}
		verifyIndependently(t, res.Bundle, payload, tm, verify.WithoutIdentitiesUnsafe(), verify.WithSignedTimestamps(1))
	})
}
