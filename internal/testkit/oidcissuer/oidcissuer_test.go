package oidcissuer

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

func key(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		k, err := GenerateKey()
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, _, b := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// verifyWithJWKS checks tok the way an OIDC relying party does: discovery,
// then the JWKS it names, then kid, alg and signature. It returns the claims.
func verifyWithJWKS(t *testing.T, issuerURL, tok string) map[string]any {
	t.Helper()
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	getJSON(t, issuerURL+"/.well-known/openid-configuration", &disc)
	var set struct {
		Keys []struct{ Kty, Alg, Kid, N, E string } `json:"keys"`
	}
	getJSON(t, disc.JWKSURI, &set)

	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	var hdr struct{ Alg, Typ, Kid string }
	decodePart(t, parts[0], &hdr)
	if hdr.Alg != "RS256" || hdr.Typ != "JWT" {
		t.Fatalf("header = %+v", hdr)
	}
	var pub *rsa.PublicKey
	for _, k := range set.Keys {
		if k.Kid == hdr.Kid && k.Kty == "RSA" && k.Alg == "RS256" {
			n, e := b64(t, k.N), b64(t, k.E)
			pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		}
	}
	if pub == nil {
		t.Fatalf("kid %q not in JWKS", hdr.Kid)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], b64(t, parts[2])); err != nil {
		t.Fatalf("signature does not verify with the JWKS key: %v", err)
	}
	var claims map[string]any
	decodePart(t, parts[1], &claims)
	if claims["iss"] != disc.Issuer {
		t.Fatalf("iss %q != discovery issuer %q", claims["iss"], disc.Issuer)
	}
	return claims
}

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64url %q: %v", s, err)
	}
	return b
}

func decodePart(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal(b64(t, s), v); err != nil {
		t.Fatal(err)
	}
}

func TestTokenVerifiesWithJWKS(t *testing.T) {
	s, err := Listen("127.0.0.1:0", key(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	code, hdr, body := get(t, s.URL()+"/token?email=alice@example.com&ttl=10m")
	if code != http.StatusOK {
		t.Fatalf("token: %d %s", code, body)
	}
	if got := hdr.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
	c := verifyWithJWKS(t, s.URL(), string(body))
	want := map[string]any{"iss": s.URL(), "sub": "alice@example.com", "aud": "sigstore",
		"email": "alice@example.com", "email_verified": true}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("claim %s = %v, want %v", k, c[k], v)
		}
	}
	iat, nbf, exp := c["iat"].(float64), c["nbf"].(float64), c["exp"].(float64)
	if iat != nbf || exp-iat != 600 {
		t.Errorf("iat %v nbf %v exp %v", iat, nbf, exp)
	}
	if d := time.Since(time.Unix(int64(iat), 0)); d < -time.Minute || d > time.Minute {
		t.Errorf("iat off by %s", d)
	}

	code, _, body = get(t, s.URL()+"/token?email=bob@example.com&sub=bob-id&aud=other")
	if code != http.StatusOK {
		t.Fatalf("token: %d %s", code, body)
	}
	c = verifyWithJWKS(t, s.URL(), string(body))
	if c["sub"] != "bob-id" || c["aud"] != "other" || c["exp"].(float64)-c["iat"].(float64) != 3600 {
		t.Errorf("claims = %v", c)
	}
}

func TestDiscoveryIssuerExact(t *testing.T) {
	// A path and an explicit port must survive byte for byte.
	const iss = "http://127.0.0.1:5556/some/path"
	is, err := New(iss, key(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	is.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/openid-configuration", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("discovery: %d", rec.Code)
	}
	var d map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d["issuer"] != iss {
		t.Fatalf("issuer %q, want %q", d["issuer"], iss)
	}
	if !bytes.Contains(rec.Body.Bytes(), []byte(`"issuer":"`+iss+`"`)) {
		t.Fatalf("issuer not byte-identical in %s", rec.Body.Bytes())
	}
	if d["jwks_uri"] != iss+"/keys" || d["token_endpoint"] != iss+"/token" {
		t.Errorf("endpoints: %v", d)
	}
	if algs, _ := d["id_token_signing_alg_values_supported"].([]any); len(algs) != 1 || algs[0] != "RS256" {
		t.Errorf("algs = %v", d["id_token_signing_alg_values_supported"])
	}
}

func TestMintFixedClock(t *testing.T) {
	is, err := New("https://issuer.test", key(t))
	if err != nil {
		t.Fatal(err)
	}
	is.now = func() time.Time { return time.Unix(1700000000, 0) }
	tok, err := is.Mint(Claims{Email: "e@x.test", TTL: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	decodePart(t, strings.Split(tok, ".")[1], &c)
	if c["iat"] != 1700000000.0 || c["nbf"] != 1700000000.0 || c["exp"] != 1700000090.0 || c["iss"] != "https://issuer.test" {
		t.Fatalf("claims = %v", c)
	}
}

func TestTokenErrors(t *testing.T) {
	is, err := New("http://127.0.0.1:1", key(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "?ttl=1h", "?email=a@b&ttl=x", "?email=a@b&ttl=-1s", "?email=a@b&ttl=25h"} {
		rec := httptest.NewRecorder()
		is.ServeHTTP(rec, httptest.NewRequest("GET", "/token"+q, nil))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("/token%s: %d, want 400", q, rec.Code)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/authorize": 501, "/nope": 404} {
		rec := httptest.NewRecorder()
		is.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	is.ServeHTTP(rec, httptest.NewRequest("POST", "/token?email=a@b", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /token: %d", rec.Code)
	}
}

func TestNewRejects(t *testing.T) {
	k := key(t)
	for _, u := range []string{"", "127.0.0.1:5556", "ftp://x", "http://x/", "http://x?q=1", "http://"} {
		if _, err := New(u, k); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := New("http://x", nil); err == nil {
		t.Error("nil key accepted")
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.pem")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Error("reloaded key differs")
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(bad); err == nil {
		t.Error("EC PEM accepted")
	}
}
