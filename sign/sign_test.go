package sign

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
)

// exampleSnapshot is the small server of internal/testkit/fixtures/testsnap.
func exampleSnapshot() *digest.Snapshot { return testsnap.Example() }

func examplePayload(t testing.TB) ([]byte, *attest.Statement) {
	st, err := attest.Build(exampleSnapshot(), attest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return p, st
}

// verifyIndependently checks a bundle the way a verifier that knows
// nothing of this package would: sigstore-go's bundle loader and verifier,
// each subject digest, and the payload.
func verifyIndependently(t *testing.T, bundleJSON, payload []byte, tm root.TrustedMaterial, policy sgverify.PolicyOption, vopts ...sgverify.VerifierOption) *sgverify.VerificationResult {
	t.Helper()
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		t.Fatalf("bundle does not load: %v", err)
	}
	if b.GetMediaType() != BundleMediaType {
		t.Errorf("media type %q", b.GetMediaType())
	}
	env := b.GetDsseEnvelope()
	if env == nil || env.PayloadType != "application/vnd.in-toto+json" || string(env.Payload) != string(payload) {
		t.Fatal("the envelope does not hold the statement")
	}
	v, err := sgverify.NewVerifier(tm, vopts...)
	if err != nil {
		t.Fatal(err)
	}
	st, err := attest.Parse(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var res *sgverify.VerificationResult
	for _, s := range st.Subject {
		d, _ := hex.DecodeString(s.Digest["sha256"])
		res, err = v.Verify(&b, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", d), policy))
		if err != nil {
			t.Fatalf("subject %s: %v", s.Name, err)
		}
	}
	if _, err := v.Verify(&b, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", make([]byte, 32)), policy)); err == nil {
		t.Error("a digest that is no subject verified")
	}
	return res
}

func TestSignKeyRoundTrip(t *testing.T) {
	payload, _ := examplePayload(t)
	for _, file := range []string{"ec-p256-sec1-params.pem", "ed25519-pkcs8.pem", "rsa-2048-pkcs1.pem", "ec-p384-pkcs8-pbkdf2.pem"} {
		t.Run(file, func(t *testing.T) {
			key, err := LoadPrivateKey(readKey(t, file), StaticPassword([]byte(testPassword)))
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewKeySigner(key)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Sign(context.Background(), payload, Options{Signer: s})
			if err != nil {
				t.Fatal(err)
			}
			hint, _ := KeyHint(key.Public())
			if res.Method != evidence.MethodKey || res.Identity.KeyHint != hint || len(res.TlogEntries) != 0 || len(res.Timestamps) != 0 {
				t.Errorf("result %+v", res)
			}
			verifyIndependently(t, res.Bundle, payload, keyMaterial(t, key.Public(), hint), sgverify.WithKey(), sgverify.WithNoObserverTimestamps())
			// Another key does not verify it.
			otherKey, _ := GenerateKey(ECDSAP256)
			var b bundle.Bundle
			_ = b.UnmarshalJSON(res.Bundle)
			v, _ := sgverify.NewVerifier(keyMaterial(t, otherKey.Public(), hint), sgverify.WithNoObserverTimestamps())
			if _, err := v.Verify(&b, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithKey())); err == nil {
				t.Error("verified with another key")
			}
		})
	}
}

func keyMaterial(t *testing.T, pub crypto.PublicKey, hint string) root.TrustedMaterial {
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	k := root.NewExpiringKey(v, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(id string) (root.TimeConstrainedVerifier, error) {
		if id != hint {
			return nil, errors.New("unknown key")
		}
		return k, nil
	})
}

func TestSignCertificateRoundTrip(t *testing.T) {
	payload, _ := examplePayload(t)
	pki := newTestPKI(t)
	key := mustECKey(t)
	leaf := pki.leaf(t, key.Public(), codeSigningLeaf())
	trusted := &caMaterial{ca: &root.FulcioCertificateAuthority{Root: pki.root, Intermediates: []*x509.Certificate{pki.inter}}}
	for _, embed := range []bool{false, true} {
		s, err := NewCertificateSigner(key, leaf, []*x509.Certificate{pki.inter, pki.root}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		s.EmbedChain = embed
		res, err := Sign(context.Background(), payload, Options{Signer: s})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Subject != "CN=release,O=Acme" || len(res.Identity.SANs) != 2 || res.Identity.SANs[0] != "release@acme.example" {
			t.Errorf("identity %+v", res.Identity)
		}
		if embed {
			// A chain in a v0.3 bundle loads only when allowed.
			var b bundle.Bundle
			if err := b.UnmarshalJSON(res.Bundle); err == nil {
				t.Error("a v0.3 bundle with a chain loaded without AllowCertificateChain")
			}
			if !strings.Contains(string(res.Bundle), "x509CertificateChain") {
				t.Error("no chain embedded")
			}
			continue
		}
		if strings.Contains(string(res.Bundle), "x509CertificateChain") {
			t.Error("chain embedded by default")
		}
		verifyIndependently(t, res.Bundle, payload, trusted, sgverify.WithoutIdentitiesUnsafe(), sgverify.WithCurrentTime())
		// Another PKI does not verify it.
		otherPKI := newTestPKI(t)
		var b bundle.Bundle
		_ = b.UnmarshalJSON(res.Bundle)
		v, _ := sgverify.NewVerifier(&caMaterial{ca: &root.FulcioCertificateAuthority{Root: otherPKI.root, Intermediates: []*x509.Certificate{otherPKI.inter}}}, sgverify.WithCurrentTime())
		if _, err := v.Verify(&b, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithoutIdentitiesUnsafe())); err == nil {
			t.Error("verified against another PKI")
		}
	}
}

func TestSignRefusals(t *testing.T) {
	payload, st := examplePayload(t)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := LoadPrivateKey(readKey(t, "ec-p256-sec1-params.pem"), nil)
	edKey, _ := LoadPrivateKey(readKey(t, "ed25519-pkcs8.pem"), nil)
	ecSigner, _ := NewKeySigner(ecKey)
	edSigner, _ := NewKeySigner(edKey)
	tok := &Token{raw: "x.y.z", Email: "a@example.com"}
	keyless, _ := NewSigstoreSigner(tok, "http://"+closedPort(t))

	bad := *st
	bad.Predicate.Sets.Tools = digest.EmptySetDigest
	badPayload, _ := bad.Marshal()

	tests := []struct {
		name    string
		payload []byte
		opts    Options
		want    error
		service string
	}{
		{name: "not a statement", payload: []byte(`{"hello":1}`), opts: Options{Signer: ecSigner}, want: ErrStatement},
		{name: "inconsistent statement", payload: badPayload, opts: Options{Signer: ecSigner}, want: ErrStatement},
		{name: "no signer", payload: payload, opts: Options{}, want: ErrConfig},
		{name: "keyless without a log", payload: payload, opts: Options{Signer: keyless, TrustedMaterial: vs}, want: ErrConfig},
		{name: "keyless Rekor v2 without TSA", payload: payload, opts: Options{Signer: keyless, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://127.0.0.1:1", Version: 2}}}, want: ErrConfig},
		{name: "keyless without trusted root", payload: payload, opts: Options{Signer: keyless,
			TransparencyLogs: []RekorService{{URL: "http://127.0.0.1:1", Version: 1}}}, want: ErrNoTrustedRoot},
		{name: "key with a TSA, without trusted root", payload: payload, opts: Options{Signer: ecSigner,
			TimestampAuthorities: []string{"http://127.0.0.1:1/api/v1/timestamp"}}, want: ErrNoTrustedRoot},
		{name: "Ed25519 to Rekor v2", payload: payload, opts: Options{Signer: edSigner, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://127.0.0.1:1", Version: 2}}}, want: ErrConfig},
		{name: "Rekor v3", payload: payload, opts: Options{Signer: ecSigner, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://127.0.0.1:1", Version: 3}}}, want: ErrConfig},
		{name: "not a URL", payload: payload, opts: Options{Signer: ecSigner, TrustedMaterial: vs,
			TimestampAuthorities: []string{"file:///etc/passwd"}}, want: ErrConfig},
		{name: "TSA unreachable", payload: payload, opts: Options{Signer: ecSigner, TrustedMaterial: vs,
			TimestampAuthorities: []string{"http://" + closedPort(t) + "/api/v1/timestamp"}}, service: ServiceTSA},
		{name: "Rekor v1 unreachable", payload: payload, opts: Options{Signer: ecSigner, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://" + closedPort(t), Version: 1}}}, service: ServiceRekor},
		{name: "Rekor v2 unreachable", payload: payload, opts: Options{Signer: ecSigner, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://" + closedPort(t), Version: 2}}}, service: ServiceRekor},
		{name: "Fulcio unreachable", payload: payload, opts: Options{Signer: keyless, TrustedMaterial: vs,
			TransparencyLogs: []RekorService{{URL: "http://" + closedPort(t), Version: 1}}}, service: ServiceFulcio},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Sign(context.Background(), tt.payload, tt.opts)
			if res != nil || err == nil {
				t.Fatalf("signed: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
			if strings.Contains(err.Error(), "--") {
				t.Errorf("a library error names a flag: %v", err)
			}
			if tt.service != "" {
				var se *ServiceError
				if !errors.As(err, &se) || se.Service != tt.service {
					t.Fatalf("want a %s ServiceError, got %v", tt.service, err)
				}
				if !strings.Contains(err.Error(), "check that the service is up") {
					t.Errorf("no hint: %v", err)
				}
			}
			if strings.Contains(err.Error(), tok.raw) {
				t.Error("the token leaked into the error")
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
