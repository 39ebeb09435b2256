package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/internal/testkit/tuftest"
	"github.com/mcpsign/mcpsign/trustroot"
)

const trProdRoot = "real-bundles/trusted-roots/production_trusted_root.sigstore-python.json"

func TestTrustrootShow(t *testing.T) {
	path := shareddata.Path(t, trProdRoot)
	code, out, stderr := runCLI(t, "trustroot", "show", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Certificate authorities: 2", "trusted from 2021-03-07T03:20:29Z, until 2022-12-31T23:59:59Z (ended)",
		"intermediate CN=sigstore-intermediate,O=sigstore.dev",
		"Transparency logs: 2", "https://log2025-1.rekor.sigstore.dev", "Ed25519, log id cf1199155bddd051268d1f16ac5c0c75c009f6fb5a63f4177f8e18d7051e3fa0",
		"Certificate transparency logs: 2", "Timestamp authorities: 1", "leaf         CN=sigstore-tsa,O=sigstore.dev",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// An RFC 2253 escape is shown once, not doubled.
	code, out, stderr = runCLI(t, "trustroot", "show", shareddata.Path(t, "real-bundles/trusted-roots/production_trusted_root.sigstore-go-old.json"))
	if code != 0 || !strings.Contains(out, `root         CN=Internal Services Root,O=GitHub\, Inc.`+"\n") {
		t.Errorf("DN escape: exit %d\n%s%s", code, out, stderr)
	}

	code, out, stderr = runCLI(t, "trustroot", "show", "--format", "json", path)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var d struct {
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
		trustroot.Description
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.SHA256 != "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66" || len(d.TransparencyLogs) != 2 ||
		d.TimestampAuthorities[0].URI != "https://timestamp.sigstore.dev/api/v1/timestamp" {
		t.Errorf("json: %+v", d)
	}

	// Hostile text from the file is escaped.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hostile := bytes.Replace(raw, []byte(`"uri": "https://fulcio.sigstore.dev"`), []byte(`"uri": "https://x\u001b[2J\u202eevil"`), 1)
	if bytes.Equal(hostile, raw) {
		t.Fatal("fixture did not change")
	}
	hp := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(hp, hostile, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "trustroot", "show", hp)
	if code != 0 || strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `https://x\u{1B}[2J\u{202E}evil`) {
		t.Errorf("exit %d, unescaped or missing URI:\n%s", code, out)
	}

	for _, args := range [][]string{
		{"trustroot", "show"},
		{"trustroot", "show", filepath.Join(t.TempDir(), "missing.json")},
		{"trustroot", "show", "--format", "yaml", path},
		{"trustroot", "show", os.Args[0]}, // not a trusted root
	} {
		if code, _, _ := runCLI(t, args...); code != exitError {
			t.Errorf("%v: exit %d, want %d", args, code, exitError)
		}
	}
}

func TestTrustrootCreateErrors(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte(strings.TrimSpace(`
-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAu0Ej7oUMGd1e+Vy0mlgdybpa1LzqGYmqC5+43G4btXc=
-----END PUBLIC KEY-----`)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tr.json")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no output":           {[]string{"--rekor-key", key}, "missing -o"},
		"nothing":             {[]string{"-o", out}, "nothing to trust"},
		"url without a key":   {[]string{"-o", out, "--rekor-url", "https://r.example"}, "--rekor-url given 1 times but --rekor-key only 0"},
		"bad time":            {[]string{"-o", out, "--rekor-key", key, "--rekor-start", "yesterday"}, "RFC 3339"},
		"origin mismatch":     {[]string{"-o", out, "--rekor-key", key, "--rekor-url", "https://a.example", "--rekor-origin", "b.example"}, "differs from the URL"},
		"missing key file":    {[]string{"-o", out, "--ctfe-key", filepath.Join(dir, "nope.pem")}, "no such file"},
		"chain is not a cert": {[]string{"-o", out, "--certificate-chain", key}, "want CERTIFICATE"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"trustroot", "create"}, tc.args...)...)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a failed create wrote its output")
	}
	// Ed25519 without origin: written, with a warning.
	code, _, stderr := runCLI(t, "trustroot", "create", "-o", out, "--rekor-key", key, "--rekor-url", "https://r.example")
	if code != 0 || !strings.Contains(stderr, "warning: transparency log 1: an Ed25519 key without an origin") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "trustroot", "create", "-o", out, "--rekor-key", key); code != exitError || !strings.Contains(stderr, "--force") {
		t.Errorf("existing output: exit %d: %s", code, stderr)
	}
}

func TestTrustrootFetch(t *testing.T) {
	prod, err := os.ReadFile(shareddata.Path(t, trProdRoot))
	if err != nil {
		t.Fatal(err)
	}
	sc := []byte(`{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","caUrls":[],"oidcUrls":[],"rekorTlogUrls":[],"rekorTlogConfig":{"selector":"ANY"},"tsaUrls":[],"tsaConfig":{"selector":"ANY"}}`)
	repo := tuftest.NewRepo(t, map[string][]byte{trustroot.TrustedRootTarget: prod, trustroot.SigningConfigTarget: sc})
	dir := t.TempDir()
	rootFile := filepath.Join(dir, "root.json")
	if err := os.WriteFile(rootFile, repo.RootJSON(1), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	out, scOut := filepath.Join(dir, "trusted_root.json"), filepath.Join(dir, "signing_config.json")

	// No root for a private mirror: a clear error.
	code, _, stderr := runCLI(t, "trustroot", "fetch", "-o", out, "--tuf-cache", cache, "--tuf-mirror", repo.Server.URL)
	if code != exitError || !strings.Contains(stderr, "--tuf-root") {
		t.Errorf("without root: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "trustroot", "fetch", "-o", out, "--signing-config-output", scOut,
		"--tuf-cache", cache, "--tuf-mirror", repo.Server.URL, "--tuf-root", rootFile)
	if code != 0 {
		t.Fatalf("fetch: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, prod) {
		t.Error("fetched trusted root differs from the target")
	}
	if got, _ := os.ReadFile(scOut); !bytes.Equal(got, sc) {
		t.Error("fetched signing config differs from the target")
	}
	// The cache now serves --offline users, with no server at all.
	repo.Server.Close()
	opts := trustroot.Options{CacheDir: cache, Mirror: repo.Server.URL, Offline: true}
	if _, err := trustroot.Load(context.Background(), opts); err != nil {
		t.Errorf("offline after fetch: %v", err)
	}
	// fetch is online: a dead mirror is an error, and the file stays.
	code, _, stderr = runCLI(t, "trustroot", "fetch", "-o", out, "--force", "--tuf-cache", cache, "--tuf-mirror", repo.Server.URL, "--timeout", "5s")
	if code != exitError || !strings.Contains(stderr, "TUF") {
		t.Errorf("dead mirror: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, prod) {
		t.Error("a failed fetch changed the output")
	}
}

// TestTrustrootCreateLocalStack builds a trusted root for the local Sigstore
// stack with 'mcpsign trustroot create' from the stack's PEM files, checks
// that it trusts what the stack's own (made by cosign trusted-root create)
// trusts, signs a DSSE bundle with sigstore-go (Fulcio, Rekor v2, TSA) and
// verifies it against the created root with sigstore-go (plain and chain
// cache) and with cosign v2.6.5.
func TestTrustrootCreateLocalStack(t *testing.T) {
	env := sigstack.Require(t)
	S := env.State
	out := filepath.Join(t.TempDir(), "trusted_root.json")
	code, _, stderr := runCLI(t, "trustroot", "create", "-o", out,
		"--certificate-chain", filepath.Join(S, "fulcio-chain.pem"), "--certificate-chain-url", env.FulcioURL,
		"--rekor-key", filepath.Join(S, "keys", "rekor-pub.pem"), "--rekor-url", env.RekorURL, "--rekor-origin", "127.0.0.1",
		"--rekor-start", "2020-01-01T00:00:00Z",
		"--ctfe-key", filepath.Join(S, "keys", "ct-pub.pem"), "--ctfe-url", env.CTURL, "--ctfe-start", "2020-01-01T00:00:00Z",
		"--tsa-certificate-chain", filepath.Join(S, "tsa-chain.pem"), "--tsa-url", env.TSAURL)
	if code != 0 {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	ours, err := trustroot.LoadTrustedRootFile(out)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := trustroot.LoadTrustedRootFile(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, _ := json.MarshalIndent(trustroot.Describe(ours, now), "", " ")
	b, _ := json.MarshalIndent(trustroot.Describe(theirs, now), "", " ")
	if !bytes.Equal(a, b) {
		t.Errorf("ours and cosign's trusted roots differ:\nours   %s\ncosign %s", a, b)
	}

	bundleJSON, artifact := trSignDSSE(t, env)
	b2 := new(bundle.Bundle)
	if err := b2.UnmarshalJSON(bundleJSON); err != nil {
		t.Fatal(err)
	}
	for name, tm := range map[string]root.TrustedMaterial{"plain": ours, "chaincache": trustroot.WithChainCache(ours)} {
		v, err := verify.NewVerifier(tm, verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1), verify.WithSignedCertificateTimestamps(1))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			san    string
			accept bool
		}{{trStackEmail, true}, {"mallory@example.com", false}} {
			id, _ := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", tc.san, "")
			_, err := v.Verify(b2, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(artifact)), verify.WithCertificateIdentity(id)))
			if (err == nil) != tc.accept {
				t.Errorf("sigstore-go %s, identity %s: err = %v", name, tc.san, err)
			}
		}
	}

	cosign := filepath.Join(env.Bin, "cosign")
	if _, err := os.Stat(cosign); err != nil {
		if os.Getenv(sigstack.RequireVar) == "1" {
			t.Fatalf("cosign: %v", err)
		}
		t.Skipf("cosign not built (%v)", err)
	}
	dir := t.TempDir()
	ap, bp := filepath.Join(dir, "artifact.txt"), filepath.Join(dir, "bundle.json")
	_ = os.WriteFile(ap, artifact, 0o600)
	_ = os.WriteFile(bp, bundleJSON, 0o600)
	for _, tc := range []struct {
		san    string
		accept bool
	}{{trStackEmail, true}, {"mallory@example.com", false}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, cosign, "verify-blob-attestation", "--bundle", bp, "--new-bundle-format",
			"--type", trStackPredicate, "--trusted-root", out,
			"--certificate-identity", tc.san, "--certificate-oidc-issuer", env.OIDCIssuer, "--use-signed-timestamps", ap)
		cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"))
		outb, err := cmd.CombinedOutput()
		cancel()
		if (err == nil) != tc.accept {
			t.Errorf("cosign with identity %s: err = %v\n%s", tc.san, err, outb)
		}
	}
}

const (
	trStackEmail     = "trustroot-test@example.com"
	trStackPredicate = "https://mcpsign.dev/test/trustroot/v1"
)

// trSignDSSE signs an in-toto statement over an artifact with sigstore-go
// against the local stack and returns the bundle JSON and the artifact.
func trSignDSSE(t *testing.T, env *sigstack.Env) (bundleJSON, artifact []byte) {
	t.Helper()
	sc, err := root.NewSigningConfigFromPath(env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	artifact = []byte("mcpsign trustroot test\n")
	sum := sha256.Sum256(artifact)
	statement, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "artifact.txt", "digest": map[string]string{"sha256": fmt.Sprintf("%x", sum)}}},
		"predicateType": trStackPredicate,
		"predicate":     map[string]any{},
	})
	now := time.Now()
	fulcio, err := root.SelectService(sc.FulcioCertificateAuthorityURLs(), sign.FulcioAPIVersions, now)
	if err != nil {
		t.Fatal(err)
	}
	rekor, err := root.SelectService(sc.RekorLogURLs(), sign.RekorAPIVersions, now)
	if err != nil {
		t.Fatal(err)
	}
	tsa, err := root.SelectService(sc.TimestampAuthorityURLs(), sign.TimestampAuthorityAPIVersions, now)
	if err != nil {
		t.Fatal(err)
	}
	keypair, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pb, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: "application/vnd.in-toto+json"}, keypair, sign.BundleOptions{
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: fulcio.URL, Timeout: 30 * time.Second}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: env.FreshToken(t, trStackEmail)},
		TransparencyLogs:           []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: rekor.URL, Version: rekor.MajorAPIVersion, Timeout: 30 * time.Second})},
		TimestampAuthorities:       []*sign.TimestampAuthority{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: tsa.URL, Timeout: 30 * time.Second})},
		Context:                    ctx,
	})
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	bundleJSON, err = b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return bundleJSON, artifact
}
