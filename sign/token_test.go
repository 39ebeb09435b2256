package sign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
)

func newIssuer(t *testing.T) *oidcissuer.Issuer {
	t.Helper()
	key, err := oidcissuer.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is, err := oidcissuer.New("https://token.actions.githubusercontent.com", key)
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func mint(t *testing.T, is *oidcissuer.Issuer, c oidcissuer.Claims) string {
	t.Helper()
	tok, err := is.Mint(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// actionsEndpoint behaves like the GitHub Actions OIDC token endpoint: it
// requires the runtime's bearer token and mints a token for the audience
// asked for.
func actionsEndpoint(t *testing.T, is *oidcissuer.Issuer, bearer string, requests *int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*requests++
		if r.URL.Path != "/idtoken" || r.URL.Query().Get("api-version") != "2.0" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "bearer "+bearer {
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		aud := r.URL.Query().Get("audience")
		if aud == "" {
			http.Error(w, `{"message":"audience missing"}`, http.StatusBadRequest)
			return
		}
		tok, err := is.Mint(oidcissuer.Claims{Email: "repo:acme/notes:ref:refs/tags/v1", Audience: aud})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"count": 1, "value": tok})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGitHubActionsToken(t *testing.T) {
	is := newIssuer(t)
	const runtimeToken = "ghs_runtimeTokenDoNotLeak"
	n := 0
	srv := actionsEndpoint(t, is, runtimeToken, &n)
	env := map[string]string{
		EnvActionsRequestURL:   srv.URL + "/idtoken?api-version=2.0",
		EnvActionsRequestToken: runtimeToken,
	}
	tok, err := IDToken(context.Background(), TokenOptions{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Source != TokenFromGitHubActions || tok.Issuer != is.URL() || len(tok.Audience) != 1 || tok.Audience[0] != "sigstore" {
		t.Errorf("token %v %+v", tok, tok.Audience)
	}
	if strings.Contains(tok.String(), tok.Raw()) || strings.Contains(tok.GoString(), tok.Raw()) {
		t.Error("String shows the token")
	}

	// Another client ID asks for another audience.
	tok, err = IDToken(context.Background(), TokenOptions{Getenv: func(k string) string { return env[k] }, ClientID: "other"})
	if err != nil || tok.Audience[0] != "other" {
		t.Fatalf("audience other: %v %v", tok, err)
	}

	// A wrong runtime token: a clear error, and no secret in it.
	env[EnvActionsRequestToken] = "ghs_wrong"
	_, err = IDToken(context.Background(), TokenOptions{Getenv: func(k string) string { return env[k] }})
	if !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "id-token: write") {
		t.Fatalf("wrong bearer: %v", err)
	}
	if strings.Contains(err.Error(), "ghs_") {
		t.Error("the runtime token leaked into the error")
	}
	if n != 3 {
		t.Errorf("%d requests", n)
	}
}

func TestIDTokenSources(t *testing.T) {
	is := newIssuer(t)
	good := mint(t, is, oidcissuer.Claims{Email: "alice@example.com"})
	fromEnv := mint(t, is, oidcissuer.Claims{Email: "env@example.com"})
	otherAud := mint(t, is, oidcissuer.Claims{Email: "alice@example.com", Audience: "other"})
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(good+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expiredNow := func() time.Time { return time.Now().Add(2 * time.Hour) }

	tests := []struct {
		name     string
		opts     TokenOptions
		env      map[string]string
		want     error
		source   TokenSource
		email    string
		hintWord string
	}{
		{name: "flag value", opts: TokenOptions{Flag: good}, source: TokenFromFlag, email: "alice@example.com"},
		{name: "flag file", opts: TokenOptions{Flag: file}, source: TokenFromFile, email: "alice@example.com"},
		{name: "flag beats env", opts: TokenOptions{Flag: file}, env: map[string]string{EnvIDToken: fromEnv}, source: TokenFromFile, email: "alice@example.com"},
		{name: "env", env: map[string]string{EnvIDToken: fromEnv}, source: TokenFromEnv, email: "env@example.com"},
		{name: "env beats actions", env: map[string]string{EnvIDToken: fromEnv, EnvActionsRequestURL: "http://127.0.0.1:1/x", EnvActionsRequestToken: "t"}, source: TokenFromEnv, email: "env@example.com"},
		{name: "nothing", want: ErrNoToken, hintWord: "give a token (or a file holding one)"},
		{name: "nothing, not interactive", opts: TokenOptions{Interactive: false}, want: ErrNoToken},
		{name: "interactive without issuer", opts: TokenOptions{Interactive: true}, want: ErrNoToken, hintWord: "OIDC provider"},
		{name: "wrong audience", opts: TokenOptions{Flag: otherAud}, want: ErrTokenAudience, hintWord: `audience "other", Fulcio expects "sigstore"`},
		{name: "expired", opts: TokenOptions{Flag: good, Now: expiredNow}, want: ErrTokenExpired, hintWord: "fresh token"},
		{name: "missing file", opts: TokenOptions{Flag: filepath.Join(dir, "nope")}, want: ErrTokenMalformed, hintWord: "neither a readable file nor a compact JWT"},
		{name: "not a JWT", opts: TokenOptions{Flag: "hunter2-not-a-token"}, want: ErrTokenMalformed},
		{name: "claims not JSON", opts: TokenOptions{Flag: "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte("[1]")) + ".c2ln"}, want: ErrTokenMalformed},
		{name: "no subject", opts: TokenOptions{Flag: "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"aud":"sigstore"}`)) + ".c2ln"}, want: ErrTokenMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Getenv = func(k string) string { return tt.env[k] }
			tok, err := IDToken(context.Background(), o)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("want %v, got %v", tt.want, err)
				}
				if !strings.Contains(err.Error(), tt.hintWord) {
					t.Errorf("%q does not say %q", err, tt.hintWord)
				}
				if strings.Contains(err.Error(), "--") {
					t.Errorf("%q names a flag", err)
				}
				for _, secret := range []string{good, otherAud, "hunter2"} {
					if strings.Contains(err.Error(), secret) {
						t.Error("the error shows the token")
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tok.Source != tt.source || tok.Email != tt.email {
				t.Errorf("got %v from %s", tok, tok.Source)
			}
		})
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIiwiYXVkIjpbInNpZ3N0b3JlIl0sImV4cCI6MX0.c2ln")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseToken(s)
		if err != nil {
			if strings.Contains(err.Error(), s) && len(s) > 8 {
				t.Fatalf("error echoes the input: %v", err)
			}
			return
		}
		if tok.Subject == "" && tok.Email == "" {
			t.Fatal("accepted a token without subject")
		}
		_ = tok.check("sigstore", time.Now())
	})
}
