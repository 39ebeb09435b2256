package main

import (
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// signingConfig writes a signing_config.json v0.2 naming the given URLs.
func signingConfig(t *testing.T, dir, fulcio, oidc, rekor string, rekorVersion int, tsa string) string {
	t.Helper()
	svc := func(u string, v int) []map[string]any {
		if u == "" {
			return []map[string]any{}
		}
		return []map[string]any{{"url": u, "majorApiVersion": v, "validFor": map[string]string{"start": "2020-01-01T00:00:00Z"}, "operator": "test"}}
	}
	sc := map[string]any{
		"mediaType":       "application/vnd.dev.sigstore.signingconfig.v0.2+json",
		"caUrls":          svc(fulcio, 1),
		"oidcUrls":        svc(oidc, 1),
		"rekorTlogUrls":   svc(rekor, rekorVersion),
		"rekorTlogConfig": map[string]string{"selector": "ANY"},
		"tsaUrls":         svc(tsa, 1),
		"tsaConfig":       map[string]string{"selector": "ANY"},
	}
	b, _ := json.Marshal(sc)
	p := filepath.Join(dir, "signing_config.json")
	os.WriteFile(p, b, 0o644)
	return p
}

func TestSignBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap, _ := exampleSnapshot(t, dir)
	ca := newTestCA(t)
	k := ecKey(t)
	goodKey, goodCert := ca.issueFor(t, "good", k, nil)
	_, otherCert := ca.issue(t, "other", nil)
	_, expired := ca.issueFor(t, "expired", k, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	})
	_, serverAuth := ca.issueFor(t, "serverauth", k, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })
	_, noDS := ca.issueFor(t, "nods", k, func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageKeyEncipherment })
	caRoot := ca.trustedRoot(t, nil) // trusts a CA only: enough for the self-check of a TSA or log that never answers

	issuerKey, err := oidcissuer.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is, _ := oidcissuer.New("http://127.0.0.1:5556", issuerKey)
	token, _ := is.Mint(oidcissuer.Claims{Email: "alice@example.com"})
	otherAud, _ := is.Mint(oidcissuer.Claims{Email: "alice@example.com", Audience: "other"})
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	dead := "http://" + closedAddr(t)
	deadConfig := signingConfig(t, t.TempDir(), dead, dead, dead, 1, dead+"/api/v1/timestamp")

	const pw = "test-password"
	const wrongPW = "Tr0ub4dor&3"
	env := map[string]string{"PW": pw, "WRONG": wrongPW}
	secrets := []string{pw, wrongPW, token, otherAud}

	tests := []struct {
		name string
		args []string
		env  map[string]string
		msgs []string
	}{
		{"wrong password", []string{"key", "--key", keyFile(t, "ec-p384-pkcs8-pbkdf2.pem"), "--password-env", "WRONG"}, env,
			[]string{"decrypting the private key", "wrong password"}},
		{"no password at all", []string{"key", "--key", keyFile(t, "ec-p384-pkcs8-pbkdf2.pem")}, env,
			[]string{"encrypted", "--password-env"}},
		{"unreadable key", []string{"key", "--key", filepath.Join(dir, "nope.key")}, env, []string{"--key", "no such file"}},
		{"RSA 1024", []string{"key", "--key", keyFile(t, "rsa-1024.pem")}, env, []string{"1024 bits is too weak", "2048"}},
		{"DSA", []string{"key", "--key", keyFile(t, "dsa-pkcs8.pem")}, env, []string{"unsupported private key"}},
		{"public key as key", []string{"key", "--key", keyFile(t, "ec-p384-public.pem")}, env, []string{"signing needs the private key"}},
		{"legacy encryption", []string{"key", "--key", keyFile(t, "ec-legacy-encrypted.pem"), "--password-env", "PW"}, env, []string{"legacy PEM encryption", "openssl pkcs8"}},
		{"rekor without upload", []string{"key", "--key", goodKey, "--rekor-url", dead}, env, []string{"--tlog-upload"}},
		{"unreachable TSA", []string{"key", "--key", goodKey, "--tsa-url", dead + "/api/v1/timestamp", "--trusted-root", caRoot}, env,
			[]string{"timestamp authority at " + dead, "connection refused", "check that the service is up", "--tsa-url"}},
		{"unreachable Rekor", []string{"key", "--key", goodKey, "--tlog-upload", "--rekor-url", dead, "--rekor-version", "2", "--trusted-root", caRoot}, env,
			[]string{"Rekor at " + dead, "connection refused", "--rekor-url and --rekor-version"}},
		{"certificate of another key", []string{"certificate", "--key", goodKey, "--certificate", otherCert, "--certificate-chain", ca.chainFile}, env,
			[]string{"does not match the private key", "openssl"}},
		{"expired certificate", []string{"certificate", "--key", goodKey, "--certificate", expired, "--certificate-chain", ca.chainFile}, env,
			[]string{"expired on", "renew"}},
		{"serverAuth certificate", []string{"certificate", "--key", goodKey, "--certificate", serverAuth, "--certificate-chain", ca.chainFile}, env,
			[]string{"serverAuth", "codeSigning"}},
		{"no digitalSignature", []string{"certificate", "--key", goodKey, "--certificate", noDS, "--certificate-chain", ca.chainFile}, env,
			[]string{"digitalSignature"}},
		{"chain without root", []string{"certificate", "--key", goodKey, "--certificate", goodCert}, env, []string{"no root CA", "--ca-roots"}},
		{"chain of another certificate", []string{"certificate", "--key", goodKey, "--certificate", goodCert, "--certificate-chain", otherCert}, env,
			[]string{"did not issue", "--certificate-chain is the issuing intermediates in order"}},
		{"no token", []string{"sigstore", "--signing-config", deadConfig, "--trusted-root", caRoot}, env,
			[]string{"no OIDC identity token", "--identity-token", "SIGSTORE_ID_TOKEN"}},
		{"wrong audience", []string{"sigstore", "--signing-config", deadConfig, "--trusted-root", caRoot, "--identity-token", otherAud}, env,
			[]string{"--identity-token: token from the token given", "wrong audience", `audience "other", Fulcio expects "sigstore"`, "--oidc-client-id"}},
		{"malformed token", []string{"sigstore", "--signing-config", deadConfig, "--trusted-root", caRoot, "--identity-token", filepath.Join(dir, "no-such-token")}, env,
			[]string{"--identity-token: ", "malformed OIDC identity token", "neither a readable file nor a compact JWT"}},
		{"wrong audience from env", []string{"sigstore", "--signing-config", deadConfig, "--trusted-root", caRoot}, map[string]string{"SIGSTORE_ID_TOKEN": otherAud},
			[]string{"token from SIGSTORE_ID_TOKEN", "wrong audience"}},
		{"unreachable Fulcio", []string{"sigstore", "--signing-config", deadConfig, "--trusted-root", caRoot, "--identity-token", tokenFile}, env,
			[]string{"Fulcio at " + dead, "connection refused"}},
		{"keyless needs a TSA with Rekor v2", []string{"sigstore", "--signing-config", signingConfig(t, t.TempDir(), dead, dead, dead, 2, ""), "--trusted-root", caRoot, "--identity-token", tokenFile}, env,
			[]string{"Rekor v2 gives no integrated time", "timestamp authority"}},
		{"offline without cache", []string{"sigstore", "--offline", "--tuf-cache", t.TempDir(), "--identity-token", tokenFile}, env,
			[]string{"offline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.sigstore.json")
			args := append([]string{"sign"}, tt.args...)
			args = append(args, snap, "-o", out)
			code, stdout, stderr := runWith(t, tt.env, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", code, stdout, stderr)
			}
			for _, m := range tt.msgs {
				if !strings.Contains(stderr, m) {
					t.Errorf("stderr does not say %q:\n%s", m, stderr)
				}
			}
			for _, s := range secrets {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("a secret was printed:\n%s%s", stdout, stderr)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(m) > 0 {
				t.Errorf("files left behind: %v", m)
			}
		})
	}

	// An existing bundle is refused before anything is signed.
	out := filepath.Join(dir, "exists.json")
	os.WriteFile(out, []byte("keep"), 0o644)
	code, _, stderr := runWith(t, env, "sign", "key", "--key", goodKey, "--tlog-upload", "--rekor-url", dead, "--trusted-root", caRoot, snap, "-o", out)
	if code != 2 || !strings.Contains(stderr, "--force") || strings.Contains(stderr, "Rekor") {
		t.Errorf("existing bundle: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep" {
		t.Error("existing bundle changed")
	}
}

func TestSignStackCommands(t *testing.T) {
	env := sigstack.Require(t)
	dir := t.TempDir()
	snap, want := exampleSnapshot(t, dir)
	tokenFile := filepath.Join(dir, "token")
	email := "cli-keyless@example.com"
	os.WriteFile(tokenFile, []byte(env.FreshToken(t, email)), 0o600)
	tr, err := trustroot.LoadTrustedRootFile(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	keylessCosign := []string{"--trusted-root", env.TrustedRoot, "--certificate-oidc-issuer", env.OIDCIssuer, "--use-signed-timestamps"}

	t.Run("keyless, token file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "k.sigstore.json")
		code, stdout, stderr := runWith(t, nil, "sign", snap, "--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot,
			"--identity-token", tokenFile, "-o", out, "--format", "json")
		if code != 0 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		var rep sign.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Method != "sigstore" || rep.Identity.SAN != email || rep.Identity.Issuer != env.OIDCIssuer ||
			len(rep.Tlog) != 1 || !rep.Tlog[0].InclusionProof || len(rep.Timestamps) != 1 || rep.Timestamps[0].Kind != "tsa" {
			t.Errorf("report %s", stdout)
		}
		b, payload := bundlePayload(t, out)
		checkStatementMatchesDigest(t, payload, want, true)
		id, _ := verify.NewShortCertificateIdentity(env.OIDCIssuer, "", email, "")
		v, _ := verify.NewVerifier(tr, verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1), verify.WithSignedCertificateTimestamps(1))
		if _, err := v.Verify(b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(id))); err != nil {
			t.Fatalf("sigstore-go: %v", err)
		}
		cosignVerify(t, out, want.Definitions[0].Digest, true, append([]string{"--certificate-identity", email}, keylessCosign...)...)
		cosignVerify(t, out, want.Definitions[0].Digest, false, append([]string{"--certificate-identity", "mallory@example.com"}, keylessCosign...)...)
	})

	t.Run("keyless, GitHub Actions token", func(t *testing.T) {
		const runtimeToken = "ghs_runtime_secret"
		requests := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests++
			if r.Header.Get("Authorization") != "bearer "+runtimeToken {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			aud := r.URL.Query().Get("audience")
			if aud != "sigstore" || r.URL.Query().Get("api-version") != "2.0" {
				http.Error(w, "bad audience", http.StatusBadRequest)
				return
			}
			// The stack's issuer stands in for token.actions.githubusercontent.com.
			tok := stackToken(t, env, "repo-acme-notes@example.com", aud)
			json.NewEncoder(w).Encode(map[string]any{"count": 1, "value": tok})
		}))
		defer srv.Close()
		actionsEnv := map[string]string{
			"ACTIONS_ID_TOKEN_REQUEST_URL":   srv.URL + "/idtoken?api-version=2.0",
			"ACTIONS_ID_TOKEN_REQUEST_TOKEN": runtimeToken,
			"GITHUB_ACTIONS":                 "true", "GITHUB_REPOSITORY": "acme/notes", "GITHUB_SHA": strings.Repeat("d", 40), "GITHUB_REF": "refs/tags/v2.0.0",
		}
		out := filepath.Join(t.TempDir(), "gha.sigstore.json")
		code, stdout, stderr := runWith(t, actionsEnv, "sign", "sigstore", snap, "--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot, "-o", out)
		if code != 0 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		if requests != 1 || !strings.Contains(stdout, "repo-acme-notes@example.com") || strings.Contains(stdout+stderr, runtimeToken) {
			t.Errorf("requests %d\n%s%s", requests, stdout, stderr)
		}
		_, payload := bundlePayload(t, out)
		st := checkStatementMatchesDigest(t, payload, want, true)
		if st.Predicate.Source == nil || st.Predicate.Source.Ref != "refs/tags/v2.0.0" {
			t.Errorf("source from the Actions environment: %+v", st.Predicate.Source)
		}
		cosignVerify(t, out, want.Definitions[1].Digest, true, append([]string{"--certificate-identity", "repo-acme-notes@example.com"}, keylessCosign...)...)
	})

	t.Run("key, Rekor v2 and TSA from the signing config", func(t *testing.T) {
		d := t.TempDir()
		out := filepath.Join(d, "key.sigstore.json")
		pub := filepath.Join(d, "k.pub")
		os.WriteFile(pub, publicPEM(t, keyFile(t, "ec-p256-sec1-params.pem"), ""), 0o644)
		code, stdout, stderr := runWith(t, nil, "sign", "key", "--key", keyFile(t, "ec-p256-sec1-params.pem"), "--tlog-upload",
			"--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot, snap, "-o", out)
		if code != 0 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		if !strings.Contains(stdout, "hashedrekord 0.0.2, inclusion proof") || !strings.Contains(stdout, "from \""+env.TSAURL+"\"") {
			t.Errorf("report:\n%s", stdout)
		}
		cosignVerify(t, out, want.Definitions[2].Digest, true, "--key", pub, "--trusted-root", env.TrustedRoot, "--use-signed-timestamps")
	})

	t.Run("deterministic signature logged twice", func(t *testing.T) {
		// RSA PKCS#1 v1.5 signs the same statement identically: Rekor v2
		// refuses the second entry, and the message says why.
		for i := 0; i < 2; i++ {
			out := filepath.Join(t.TempDir(), "rsa.sigstore.json")
			code, _, stderr := runWith(t, nil, "sign", "key", "--key", keyFile(t, "rsa-2048-pkcs1.pem"), "--tlog-upload",
				"--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot, snap, "-o", out)
			if i == 1 && (code != 2 || !strings.Contains(stderr, "already holds this exact signature") || !strings.Contains(stderr, "ECDSA")) {
				t.Fatalf("second entry: exit %d %s", code, stderr)
			}
		}
	})

	t.Run("certificate and TSA", func(t *testing.T) {
		ca := newTestCA(t)
		key, cert := ca.issue(t, "release", nil)
		out := filepath.Join(t.TempDir(), "cert.sigstore.json")
		code, stdout, stderr := runWith(t, nil, "sign", "certificate", "--key", key, "--certificate", cert, "--certificate-chain", ca.chainFile,
			"--tsa-url", env.TSAURL, "--trusted-root", env.TrustedRoot, snap, "-o", out)
		if code != 0 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		if !strings.Contains(stdout, "timestamp") || strings.Contains(stdout, "timestamp     none") {
			t.Errorf("report:\n%s", stdout)
		}
		trWithCA := ca.trustedRoot(t, tr)
		cosignVerify(t, out, want.Definitions[0].Digest, true, "--trusted-root", trWithCA, "--certificate-identity", "release@acme.example",
			"--certificate-oidc-issuer-regexp", ".*", "--insecure-ignore-tlog", "--insecure-ignore-sct", "--use-signed-timestamps")
		var b bundle.Bundle
		raw, _ := os.ReadFile(out)
		if err := b.UnmarshalJSON(raw); err != nil || len(b.GetVerificationMaterial().GetTimestampVerificationData().GetRfc3161Timestamps()) != 1 {
			t.Errorf("no timestamp in the bundle: %v", err)
		}
	})
}

// stackToken mints a token for email and audience aud at the stack's issuer.
func stackToken(t *testing.T, env *sigstack.Env, email, aud string) string {
	u, err := url.Parse(env.OIDCTokenURL)
	if err != nil {
		t.Error(err)
		return ""
	}
	q := u.Query()
	q.Set("email", email)
	q.Set("aud", aud)
	u.RawQuery = q.Encode()
	resp, err := http.Get(u.String())
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil || b.Len() > 1<<16 {
			break
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("token endpoint: %s", resp.Status)
	}
	return strings.TrimSpace(b.String())
}
