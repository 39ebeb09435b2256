package sign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/oauthflow"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// DefaultClientID is the OIDC client ID (and token audience) of the
// public-good Fulcio.
const DefaultClientID = "sigstore"

// MaxTokenBytes bounds an ID token, from any source.
const MaxTokenBytes = 64 << 10

// Environment variables read for an ID token.
const (
	EnvIDToken             = "SIGSTORE_ID_TOKEN"
	EnvActionsRequestURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	EnvActionsRequestToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// Why no usable token was found; IDToken wraps one of these.
var (
	ErrNoToken        = errors.New("no OIDC identity token")
	ErrTokenMalformed = errors.New("malformed OIDC identity token")
	ErrTokenAudience  = errors.New("OIDC identity token for the wrong audience")
	ErrTokenExpired   = errors.New("OIDC identity token expired")
)

// TokenSource says where an ID token came from.
type TokenSource string

// The sources IDToken tries, in this order.
const (
	TokenFromFlag          TokenSource = "the token given"
	TokenFromFile          TokenSource = "the token file given"
	TokenFromEnv           TokenSource = EnvIDToken
	TokenFromGitHubActions TokenSource = "GitHub Actions"
	TokenFromBrowser       TokenSource = "browser login"
)

// Token is an OIDC ID token and what it claims (unverified: Fulcio verifies
// it). Printing a Token never shows the token itself.
type Token struct {
	raw    string
	Source TokenSource
	// Unverified claims, for messages and early checks.
	Issuer   string
	Subject  string
	Email    string
	Audience []string
	Expiry   time.Time
}

// Raw returns the token, to send to Fulcio. Never print or log it.
func (t *Token) Raw() string { return t.raw }

// String describes the token without revealing it.
func (t *Token) String() string {
	who := t.Email
	if who == "" {
		who = t.Subject
	}
	return fmt.Sprintf("token for %s from %s (issuer %s)", textsafe.RawQuote(who), t.Source, textsafe.RawQuote(t.Issuer))
}

// GoString is String, so that %#v does not reveal the token either.
func (t *Token) GoString() string { return t.String() }

// TokenOptions say where IDToken may look for a token.
type TokenOptions struct {
	// Flag is the --identity-token value: a compact JWT, or the path of a
	// file holding one.
	Flag string
	// Getenv reads SIGSTORE_ID_TOKEN and the GitHub Actions variables;
	// nil reads none.
	Getenv func(string) string
	// ClientID is the audience Fulcio expects (DefaultClientID if empty).
	ClientID string
	// HTTPClient fetches the GitHub Actions token; nil means a client with
	// a 30 s timeout.
	HTTPClient *http.Client
	// Interactive allows the browser flow: set it only for a person at a
	// terminal.
	Interactive bool
	// Issuer is the OIDC provider of the browser flow (from the signing
	// config).
	Issuer string
	// In and Out are the terminal of the browser flow (for the code, when
	// no browser can be opened, and the messages).
	In  io.Reader
	Out io.Writer
	// BrowserOpener opens the login URL; nil means the system browser.
	BrowserOpener func(url string) error
	// Now is the clock for the expiry check; nil means time.Now.
	Now func() time.Time
}

// IDToken returns an OIDC ID token from, in order: the --identity-token
// value (or file), $SIGSTORE_ID_TOKEN, the GitHub Actions ambient token
// (ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN, audience ClientID), or the
// interactive browser flow when opts.Interactive. The token's own claims
// are checked before it is used: an expired token or one for another
// audience is refused with ErrTokenExpired or ErrTokenAudience.
func IDToken(ctx context.Context, opts TokenOptions) (*Token, error) {
	if opts.ClientID == "" {
		opts.ClientID = DefaultClientID
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var (
		raw string
		src TokenSource
		err error
	)
	switch {
	case opts.Flag != "":
		raw, src, err = tokenFromFlag(opts.Flag)
	case getenv(EnvIDToken) != "":
		raw, src = strings.TrimSpace(getenv(EnvIDToken)), TokenFromEnv
	case getenv(EnvActionsRequestURL) != "" && getenv(EnvActionsRequestToken) != "":
		src = TokenFromGitHubActions
		raw, err = GitHubActionsToken(ctx, opts.HTTPClient, getenv(EnvActionsRequestURL), getenv(EnvActionsRequestToken), opts.ClientID)
	case opts.Interactive:
		src = TokenFromBrowser
		raw, err = browserToken(opts)
	default:
		return nil, fmt.Errorf("%w: give a token (or a file holding one), set %s, run in GitHub Actions with 'permissions: id-token: write', or run at a terminal to log in with a browser", ErrNoToken, EnvIDToken)
	}
	if err != nil {
		return nil, err
	}
	tok, err := parseToken(raw)
	if err != nil {
		return nil, fmt.Errorf("token from %s: %w", src, err)
	}
	tok.Source = src
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if err := tok.check(opts.ClientID, now()); err != nil {
		return nil, fmt.Errorf("token from %s: %w", src, err)
	}
	return tok, nil
}

// tokenFromFlag reads --identity-token: a file when one of that name
// exists, else the value itself if it has the shape of a compact JWT.
func tokenFromFlag(v string) (string, TokenSource, error) {
	if fi, err := os.Stat(v); err == nil && fi.Mode().IsRegular() {
		b, err := boundedfile.Read(v, MaxTokenBytes, nil)
		if err != nil {
			return "", "", fmt.Errorf("the token file given: %w", err)
		}
		return strings.TrimSpace(string(b)), TokenFromFile, nil
	}
	if looksLikeJWT(v) {
		return v, TokenFromFlag, nil
	}
	// The value is not echoed: it may be a mistyped token.
	return "", "", fmt.Errorf("%w: the token given is neither a readable file nor a compact JWT (header.payload.signature)", ErrTokenMalformed)
}

func looksLikeJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(s) > MaxTokenBytes {
		return false
	}
	for _, p := range parts[:2] {
		if p == "" {
			return false
		}
		if _, err := base64.RawURLEncoding.DecodeString(p); err != nil {
			return false
		}
	}
	return true
}

// parseToken reads the claims of a compact JWT without verifying it.
func parseToken(raw string) (*Token, error) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrTokenMalformed, MaxTokenBytes)
	}
	if !looksLikeJWT(raw) {
		return nil, fmt.Errorf("%w: not a compact JWT (header.payload.signature)", ErrTokenMalformed)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[1])
	var c struct {
		Iss   string          `json:"iss"`
		Sub   string          `json:"sub"`
		Email string          `json:"email"`
		Aud   json.RawMessage `json:"aud"`
		Exp   *json.Number    `json:"exp"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: claims are not a JSON object", ErrTokenMalformed)
	}
	t := &Token{raw: raw, Issuer: c.Iss, Subject: c.Sub, Email: c.Email}
	if len(c.Aud) > 0 {
		var one string
		if json.Unmarshal(c.Aud, &one) == nil {
			t.Audience = []string{one}
		} else if json.Unmarshal(c.Aud, &t.Audience) != nil {
			return nil, fmt.Errorf("%w: aud is neither a string nor an array of strings", ErrTokenMalformed)
		}
	}
	if c.Exp != nil {
		f, err := c.Exp.Float64()
		if err != nil || f < 0 || f > 1<<40 {
			return nil, fmt.Errorf("%w: exp is not a time", ErrTokenMalformed)
		}
		t.Expiry = time.Unix(int64(f), 0)
	}
	if t.Subject == "" && t.Email == "" {
		return nil, fmt.Errorf("%w: no sub or email claim", ErrTokenMalformed)
	}
	return t, nil
}

func (t *Token) check(clientID string, now time.Time) error {
	ok := false
	for _, a := range t.Audience {
		if a == clientID {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("%w: audience %s, Fulcio expects %s; request the token with audience %s (or set the client ID your Fulcio uses, if it uses another)",
			ErrTokenAudience, textsafe.RawQuote(strings.Join(t.Audience, ",")), textsafe.RawQuote(clientID), textsafe.RawQuote(clientID))
	}
	if !t.Expiry.IsZero() && !now.Before(t.Expiry) {
		return fmt.Errorf("%w at %s; get a fresh token (they usually live minutes)", ErrTokenExpired, t.Expiry.UTC().Format(time.RFC3339))
	}
	return nil
}

// GitHubActionsToken fetches the GitHub Actions ambient OIDC token for
// audience: GET requestURL with audience=AUDIENCE added to its query and
// "Authorization: bearer REQUESTTOKEN"; the answer is {"value": JWT}. The
// job needs 'permissions: id-token: write'.
func GitHubActionsToken(ctx context.Context, client *http.Client, requestURL, requestToken, audience string) (string, error) {
	u, err := url.Parse(requestURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%w: %s is not an http(s) URL", ErrNoToken, EnvActionsRequestURL)
	}
	q := u.Query()
	q.Set("audience", audience)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("GitHub Actions token request: %w", err)
	}
	req.Header.Set("Authorization", "bearer "+requestToken)
	req.Header.Set("Accept", "application/json")
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: GitHub Actions token request: %w", ErrNoToken, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: GitHub Actions token response: %w", ErrNoToken, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: GitHub Actions token endpoint answered %s; does the job have 'permissions: id-token: write'?", ErrNoToken, resp.Status)
	}
	if len(body) > MaxTokenBytes {
		return "", fmt.Errorf("%w: GitHub Actions token response larger than %d bytes", ErrNoToken, MaxTokenBytes)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
		return "", fmt.Errorf("%w: GitHub Actions token response has no \"value\"", ErrNoToken)
	}
	return v.Value, nil
}

// browserToken runs the interactive OIDC flow (authorization code with
// PKCE, a redirect listener on localhost, or a code pasted on the terminal).
func browserToken(opts TokenOptions) (string, error) {
	if opts.Issuer == "" {
		return "", fmt.Errorf("%w: no OIDC provider for the browser login (the signing config lists none)", ErrNoToken)
	}
	getter := &oauthflow.InteractiveIDTokenGetter{
		HTMLPage:      oauthflow.DefaultIDTokenGetter.HTMLPage,
		Input:         opts.In,
		Output:        opts.Out,
		BrowserOpener: opts.BrowserOpener,
	}
	tok, err := oauthflow.OIDConnect(opts.Issuer, opts.ClientID, "", "", getter)
	if err != nil {
		return "", fmt.Errorf("%w: browser login at %s: %w", ErrNoToken, opts.Issuer, err)
	}
	return tok.RawString, nil
}
