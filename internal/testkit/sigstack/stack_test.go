package sigstack_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
)

const (
	smokeEmail         = "smoke@example.com"
	smokePredicateType = "https://mcpsign.dev/test/sigstack-smoke/v1"
)

// stopwatch accumulates time spent in one remote service.
type stopwatch struct {
	mu sync.Mutex
	d  time.Duration
}

func (s *stopwatch) add(t0 time.Time) {
	s.mu.Lock()
	s.d += time.Since(t0)
	s.mu.Unlock()
}

type timedCA struct {
	sign.CertificateProvider
	sw *stopwatch
}

func (c timedCA) GetCertificate(ctx context.Context, k sign.Keypair, o *sign.CertificateProviderOptions) ([]byte, error) {
	defer c.sw.add(time.Now())
	return c.CertificateProvider.GetCertificate(ctx, k, o)
}

type timedLog struct {
	sign.Transparency
	sw *stopwatch
}

func (l timedLog) GetTransparencyLogEntry(ctx context.Context, key []byte, b *protobundle.Bundle) error {
	defer l.sw.add(time.Now())
	return l.Transparency.GetTransparencyLogEntry(ctx, key, b)
}

type timedTransport struct {
	http.RoundTripper
	sw *stopwatch
}

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	defer t.sw.add(time.Now())
	return t.RoundTripper.RoundTrip(r)
}

// TestStackSignVerify signs an in-toto statement as a DSSE envelope with
// sigstore-go against the local stack (Fulcio, Rekor v2, TSA, CT log), then
// verifies the bundle with sigstore-go and with cosign.
func TestStackSignVerify(t *testing.T) {
	env := sigstack.Require(t)
	tr, err := root.NewTrustedRootFromPath(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := root.NewSigningConfigFromPath(env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	token := env.FreshToken(t, smokeEmail)

	artifact := []byte("mcpsign sigstack smoke test\n")
	digest := sha256.Sum256(artifact)
	statement, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "artifact.txt", "digest": map[string]string{"sha256": fmt.Sprintf("%x", digest)}}},
		"predicateType": smokePredicateType,
		"predicate":     map[string]any{"purpose": "sigstack smoke test"},
	})
	if err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	fulcioSvc, err := root.SelectService(sc.FulcioCertificateAuthorityURLs(), sign.FulcioAPIVersions, now)
	if err != nil {
		t.Fatalf("select Fulcio: %v", err)
	}
	rekorSvc, err := root.SelectService(sc.RekorLogURLs(), sign.RekorAPIVersions, now)
	if err != nil {
		t.Fatalf("select Rekor: %v", err)
	}
	if rekorSvc.MajorAPIVersion != 2 {
		t.Fatalf("signing config selects Rekor API v%d, want v2", rekorSvc.MajorAPIVersion)
	}
	tsaSvc, err := root.SelectService(sc.TimestampAuthorityURLs(), sign.TimestampAuthorityAPIVersions, now)
	if err != nil {
		t.Fatalf("select TSA: %v", err)
	}

	var fulcioSW, rekorSW, tsaSW stopwatch
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keypair, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := sign.BundleOptions{
		CertificateProvider: timedCA{sign.NewFulcio(&sign.FulcioOptions{
			BaseURL: fulcioSvc.URL, Timeout: 30 * time.Second}), &fulcioSW},
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: token},
		TransparencyLogs: []sign.Transparency{timedLog{sign.NewRekor(&sign.RekorOptions{
			BaseURL: rekorSvc.URL, Version: 2, Timeout: 30 * time.Second}), &rekorSW}},
		TimestampAuthorities: []*sign.TimestampAuthority{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{
			URL: tsaSvc.URL, Timeout: 30 * time.Second,
			Transport: timedTransport{http.DefaultTransport, &tsaSW}})},
		Context: ctx,
	}
	t0 := time.Now()
	pb, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: "application/vnd.in-toto+json"}, keypair, opts)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	total := time.Since(t0)
	t.Logf("sign: total %v = Fulcio %v + Rekor v2 %v + TSA %v + local %v",
		total.Round(time.Millisecond), fulcioSW.d.Round(time.Millisecond), rekorSW.d.Round(time.Millisecond),
		tsaSW.d.Round(time.Millisecond), (total - fulcioSW.d - rekorSW.d - tsaSW.d).Round(time.Millisecond))

	b, err := bundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	bundleJSON, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}

	// sigstore-go: log inclusion, signed timestamp and SCT all required.
	v, err := verify.NewVerifier(tr, verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1),
		verify.WithSignedCertificateTimestamps(1))
	if err != nil {
		t.Fatal(err)
	}
	id, err := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", smokeEmail, "")
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	res, err := v.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(artifact)), verify.WithCertificateIdentity(id)))
	if err != nil {
		t.Fatalf("sigstore-go verify: %v", err)
	}
	t.Logf("sigstore-go verify: %v", time.Since(t1).Round(time.Millisecond))
	if res.Statement == nil || res.Statement.GetPredicateType() != smokePredicateType {
		t.Errorf("verified statement predicate type = %v", res.Statement)
	}
	if res.Signature == nil || res.Signature.Certificate == nil || res.Signature.Certificate.SubjectAlternativeName != smokeEmail {
		t.Errorf("verified certificate SAN: %+v", res.Signature)
	}

	// ... and it fails closed on a wrong identity or another artifact.
	wrongID, err := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", "mallory@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(artifact)), verify.WithCertificateIdentity(wrongID))); err == nil {
		t.Error("verify accepted the wrong identity")
	}
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifact(strings.NewReader("tampered")), verify.WithCertificateIdentity(id))); err == nil {
		t.Error("verify accepted another artifact")
	}

	t.Run("cosign", func(t *testing.T) { cosignVerify(t, env, artifact, bundleJSON) })
}

// cosignVerify checks the sigstore-go bundle with cosign verify-blob-attestation.
func cosignVerify(t *testing.T, env *sigstack.Env, artifact, bundleJSON []byte) {
	cosign := filepath.Join(env.Bin, "cosign")
	if env.Bin == "" {
		cosign = "cosign"
	}
	path, err := exec.LookPath(cosign)
	if err != nil {
		if os.Getenv(sigstack.RequireVar) == "1" {
			t.Fatalf("cosign not found: %v", err)
		}
		t.Skipf("cosign not found (%v); run scripts/sigstore-local/build.sh", err)
	}
	dir := t.TempDir()
	artifactPath := filepath.Join(dir, "artifact.txt")
	bundlePath := filepath.Join(dir, "dsse.sigstore.json")
	for p, data := range map[string][]byte{artifactPath: artifact, bundlePath: bundleJSON} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(identity string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, "verify-blob-attestation",
			"--bundle", bundlePath, "--new-bundle-format", "--type", smokePredicateType,
			"--trusted-root", env.TrustedRoot,
			"--certificate-identity", identity, "--certificate-oidc-issuer", env.OIDCIssuer,
			"--use-signed-timestamps", artifactPath)
		// Keep cosign away from ~/.sigstore and the public TUF repository.
		cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t0 := time.Now()
	if out, err := run(smokeEmail); err != nil {
		t.Fatalf("cosign verify-blob-attestation: %v\n%s", err, out)
	}
	t.Logf("cosign verify-blob-attestation: OK in %v", time.Since(t0).Round(time.Millisecond))
	if out, err := run("mallory@example.com"); err == nil {
		t.Errorf("cosign accepted the wrong identity:\n%s", out)
	}
}
