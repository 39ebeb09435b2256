package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// authServer is an OpenID provider with the authorization code flow and
// PKCE (S256), as the browser login needs: discovery, /authorize (which
// redirects straight back, as if the person had logged in), /token (which
// checks the code verifier) and /keys.
type authServer struct {
	t      *testing.T
	srv    *httptest.Server
	key    *rsa.PrivateKey
	email  string
	aud    string
	mu     sync.Mutex
	codes  map[string]authRequest
	tokens int
}

type authRequest struct {
	challenge, nonce, redirect, clientID string
}

func newAuthServer(t *testing.T, email string) *authServer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a := &authServer{t: t, key: key, email: email, codes: map[string]authRequest{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
			"jwks_uri": a.srv.URL + "/keys", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		e := big.NewInt(int64(key.E)).Bytes()
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "k1",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(e),
		}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "PKCE S256 required", http.StatusBadRequest)
			return
		}
		code := randomString(t)
		a.mu.Lock()
		a.codes[code] = authRequest{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri"), clientID: q.Get("client_id")}
		a.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		back := u.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		u.RawQuery = back.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		req, ok := a.codes[r.Form.Get("code")]
		delete(a.codes, r.Form.Get("code"))
		a.mu.Unlock()
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != req.challenge || r.Form.Get("redirect_uri") != req.redirect {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		aud := req.clientID
		if a.aud != "" {
			aud = a.aud
		}
		a.mu.Lock()
		a.tokens++
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": "at-" + randomString(t), "token_type": "Bearer", "expires_in": 300,
			"id_token": a.idToken(map[string]any{
				"iss": a.srv.URL, "sub": a.email, "aud": aud, "email": a.email, "email_verified": true,
				"nonce": req.nonce, "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(),
			}),
		})
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authServer) idToken(claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "k1"})
	p, _ := json.Marshal(claims)
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, a.key, crypto.SHA256, sum[:])
	if err != nil {
		a.t.Error(err)
	}
	return in + "." + enc.EncodeToString(sig)
}

func randomString(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// browser follows the login URL as a browser would: the provider redirects
// to the local callback, which receives the code.
func browser(t *testing.T, opened *string) func(string) error {
	return func(u string) error {
		*opened = u
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			resp.Body.Close()
		}()
		return nil
	}
}

func TestBrowserLogin(t *testing.T) {
	a := newAuthServer(t, "person@example.com")
	var opened string
	var out bytes.Buffer
	tok, err := IDToken(context.Background(), TokenOptions{
		Interactive: true, Issuer: a.srv.URL, Out: &out, In: strings.NewReader(""), BrowserOpener: browser(t, &opened),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if tok.Source != TokenFromBrowser || tok.Email != "person@example.com" || tok.Issuer != a.srv.URL {
		t.Errorf("token %v", tok)
	}
	u, _ := url.Parse(opened)
	if u.Query().Get("client_id") != DefaultClientID || u.Query().Get("code_challenge_method") != "S256" || !strings.Contains(u.Query().Get("scope"), "openid") {
		t.Errorf("login URL %s", opened)
	}
	if strings.Contains(out.String(), tok.Raw()) {
		t.Error("the token was printed")
	}

	// The provider issues a token for another audience: refused.
	a.aud = "other"
	_, err = IDToken(context.Background(), TokenOptions{Interactive: true, Issuer: a.srv.URL, Out: &out, BrowserOpener: browser(t, &opened)})
	if err == nil {
		t.Fatal("a token for another audience was accepted")
	}

	// A terminal is needed: without Interactive, no login is attempted.
	before := a.tokens
	if _, err := IDToken(context.Background(), TokenOptions{Issuer: a.srv.URL, BrowserOpener: browser(t, &opened)}); err == nil || a.tokens != before {
		t.Errorf("login without a terminal: %v", err)
	}
}
