// Package oidcissuer is a minimal OpenID Connect issuer for tests and local
// Sigstore stacks. It serves a discovery document, a JWKS and a token
// endpoint that mints RS256 ID tokens for any e-mail address asked for.
//
// It authenticates nobody: anyone who can reach it can obtain a token for
// any identity. Bind it to loopback only and never trust it outside a
// disposable test stack.
package oidcissuer

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultAudience is the audience Fulcio expects (its OIDC client ID).
const DefaultAudience = "sigstore"

// DefaultTTL is the lifetime of a token when the request names none.
const DefaultTTL = time.Hour

// MaxTTL is the longest lifetime the token endpoint grants.
const MaxTTL = 24 * time.Hour

// Claims are the caller-chosen parts of an ID token. Mint fills in iss, iat,
// nbf and exp itself.
type Claims struct {
	// Email is the e-mail claim; it becomes the certificate SAN in Fulcio.
	// It may be empty when Subject is set (a token without email and
	// email_verified, as GitHub Actions mints).
	Email string
	// Subject is the sub claim; empty means Email.
	Subject string
	// Extra are further string claims, e.g. the GitHub Actions claims
	// (repository, sha, ref, job_workflow_ref...) that Fulcio's
	// github-workflow issuer type turns into certificate extensions. They
	// may not name a claim Mint sets itself (ReservedClaims).
	Extra map[string]string
	// Audience is the aud claim; empty means DefaultAudience.
	Audience string
	// TTL is the token lifetime; zero means DefaultTTL.
	TTL time.Duration
}

// Issuer mints tokens and serves the OIDC endpoints. It implements
// http.Handler and is safe for concurrent use.
type Issuer struct {
	issuer string
	key    *rsa.PrivateKey
	kid    string
	now    func() time.Time
	mux    *http.ServeMux
}

// New returns an Issuer whose discovery document names issuerURL (used byte
// for byte as the iss claim) and which signs with key.
func New(issuerURL string, key *rsa.PrivateKey) (*Issuer, error) {
	u, err := url.Parse(issuerURL)
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: parse issuer URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("oidcissuer: issuer URL %q must be http(s)://host[:port][/path]", issuerURL)
	}
	if strings.HasSuffix(issuerURL, "/") {
		return nil, fmt.Errorf("oidcissuer: issuer URL %q must not end in a slash", issuerURL)
	}
	if key == nil || key.N.BitLen() < 2048 {
		return nil, errors.New("oidcissuer: need an RSA key of at least 2048 bits")
	}
	kid, err := thumbprint(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	is := &Issuer{issuer: issuerURL, key: key, kid: kid, now: time.Now, mux: http.NewServeMux()}
	is.mux.HandleFunc("GET /.well-known/openid-configuration", is.discovery)
	is.mux.HandleFunc("GET /keys", is.jwks)
	is.mux.HandleFunc("GET /token", is.token)
	is.mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "interactive login is not supported; use GET /token?email=...", http.StatusNotImplemented)
	})
	is.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return is, nil
}

// URL returns the issuer URL exactly as it appears in tokens.
func (is *Issuer) URL() string { return is.issuer }

// KeyID returns the kid of the signing key (its RFC 7638 thumbprint).
func (is *Issuer) KeyID() string { return is.kid }

// ServeHTTP serves the discovery document, /keys, /token and /healthz.
func (is *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) { is.mux.ServeHTTP(w, r) }

// ReservedClaims are the claims Mint sets; Claims.Extra may not name them.
var ReservedClaims = []string{"iss", "sub", "aud", "iat", "nbf", "exp", "email", "email_verified"}

// ExtraClaimPrefix prefixes the query parameters of GET /token that become
// Claims.Extra: claim.repository=acme/notes is the claim "repository".
const ExtraClaimPrefix = "claim."

// Mint returns a signed compact JWT for c.
func (is *Issuer) Mint(c Claims) (string, error) {
	if c.Email == "" && c.Subject == "" {
		return "", errors.New("oidcissuer: email (or sub) is required")
	}
	if c.Subject == "" {
		c.Subject = c.Email
	}
	if c.Audience == "" {
		c.Audience = DefaultAudience
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < 0 || c.TTL > MaxTTL {
		return "", fmt.Errorf("oidcissuer: ttl %s outside (0, %s]", c.TTL, MaxTTL)
	}
	now := is.now().Unix()
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": is.kid})
	if err != nil {
		return "", fmt.Errorf("oidcissuer: encode header: %w", err)
	}
	claims := map[string]any{}
	for k, v := range c.Extra {
		if k == "" || slices.Contains(ReservedClaims, k) {
			return "", fmt.Errorf("oidcissuer: extra claim %q is reserved or empty", k)
		}
		claims[k] = v
	}
	for k, v := range map[string]any{
		"iss": is.issuer, "sub": c.Subject, "aud": c.Audience,
		"iat": now, "nbf": now, "exp": now + int64(c.TTL/time.Second),
	} {
		claims[k] = v
	}
	if c.Email != "" {
		claims["email"], claims["email_verified"] = c.Email, true
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oidcissuer: encode claims: %w", err)
	}
	enc := base64.RawURLEncoding
	signingInput := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, is.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("oidcissuer: sign token: %w", err)
	}
	return signingInput + "." + enc.EncodeToString(sig), nil
}

func (is *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                is.issuer,
		"authorization_endpoint":                is.issuer + "/authorize",
		"token_endpoint":                        is.issuer + "/token",
		"jwks_uri":                              is.issuer + "/keys",
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "email"},
		"claims_supported":                      []string{"iss", "sub", "aud", "iat", "nbf", "exp", "email", "email_verified"},
	})
}

func (is *Issuer) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"keys": []map[string]string{jwk(&is.key.PublicKey, is.kid)}})
}

func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c := Claims{Email: q.Get("email"), Subject: q.Get("sub"), Audience: q.Get("aud")}
	for k, v := range q {
		if name, ok := strings.CutPrefix(k, ExtraClaimPrefix); ok {
			if len(v) != 1 {
				http.Error(w, "claim "+name+" given more than once", http.StatusBadRequest)
				return
			}
			if c.Extra == nil {
				c.Extra = map[string]string{}
			}
			c.Extra[name] = v[0]
		}
	}
	if s := q.Get("ttl"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			http.Error(w, "bad ttl: "+err.Error(), http.StatusBadRequest)
			return
		}
		c.TTL = d
	}
	tok, err := is.Mint(c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/jwt")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(tok))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func jwk(pub *rsa.PublicKey, kid string) map[string]string {
	enc := base64.RawURLEncoding
	return map[string]string{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
		"n": enc.EncodeToString(pub.N.Bytes()),
		"e": enc.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url).
func thumbprint(pub *rsa.PublicKey) (string, error) {
	k := jwk(pub, "")
	// Members in lexicographic order, no whitespace (RFC 7638 §3).
	b, err := json.Marshal(struct {
		E   string `json:"e"`
		Kty string `json:"kty"`
		N   string `json:"n"`
	}{k["e"], k["kty"], k["n"]})
	if err != nil {
		return "", fmt.Errorf("oidcissuer: thumbprint: %w", err)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
