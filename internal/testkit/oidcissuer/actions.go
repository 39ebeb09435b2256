package oidcissuer

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
)

// MintFunc returns an ID token for audience. It is how an Actions token
// endpoint obtains the token it hands out.
type MintFunc func(ctx context.Context, audience string) (string, error)

// ActionsTokenHandler serves the GitHub Actions ID token request protocol,
// as a runner's ACTIONS_ID_TOKEN_REQUEST_URL does (docs/SIGNING.md, the
// ambient GitHub Actions token): GET with "Authorization: bearer
// REQUESTTOKEN" and an optional audience query parameter (default
// DefaultAudience) answers {"value": JWT}, the JWT from mint. A request
// without the exact request token is refused with 401 and no token.
//
// Like the Issuer it hands a token to anyone holding requestToken: tests
// only.
func ActionsTokenHandler(requestToken string, mint MintFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if requestToken == "" || !ok || !strings.EqualFold(scheme, "bearer") ||
			subtle.ConstantTimeCompare([]byte(got), []byte(requestToken)) != 1 {
			http.Error(w, "bad or missing bearer request token", http.StatusUnauthorized)
			return
		}
		aud := r.URL.Query().Get("audience")
		if aud == "" {
			aud = DefaultAudience
		}
		tok, err := mint(r.Context(), aud)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"count": len(tok), "value": tok})
	})
}

// ActionsTokenHandler is the package's ActionsTokenHandler minting with
// is: tokens for c, with the audience the request asks for.
func (is *Issuer) ActionsTokenHandler(requestToken string, c Claims) http.Handler {
	return ActionsTokenHandler(requestToken, func(_ context.Context, audience string) (string, error) {
		c.Audience = audience
		return is.Mint(c)
	})
}
