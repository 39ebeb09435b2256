package proxycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/mcpsign/mcpsign/oauth"
	"github.com/mcpsign/mcpsign/proxy"
)

// OAuthConfig is the OAuth sign-in to a remote server (--oauth and its
// flags, docs/REMOTE.md "Authentication") in a form that may travel in the
// hand-over: it holds no secret. A client secret is named by the
// environment variable that holds it; tokens stay in the token cache
// (mode 0600), where mcpsign's sign-in left them and the proxy finds them.
type OAuthConfig struct {
	ClientID     string   `json:"clientId,omitempty"`
	MetadataURL  string   `json:"clientMetadataUrl,omitempty"`
	SecretEnv    string   `json:"clientSecretEnv,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	RedirectPort int      `json:"redirectPort,omitempty"`
	NoBrowser    bool     `json:"noBrowser,omitempty"`
	CacheDir     string   `json:"cacheDir,omitempty"`

	// Open opens the browser for a sign-in; nil means the desktop's
	// (oauth.OpenBrowser), and none with NoBrowser. It does not travel in
	// the hand-over: mcpsign-proxy uses the desktop's.
	Open func(ctx context.Context, url string) error `json:"-"`
}

// SecretEnvError is returned when the environment variable that should
// hold the OAuth client secret (OAuthConfig.SecretEnv) is not set or empty.
type SecretEnvError struct{ Name string }

func (e *SecretEnvError) Error() string {
	return "the environment variable " + e.Name + " is not set or empty"
}

// Transport returns the OAuth transport of c for the server at serverURL:
// the client secret read from the environment now, the browser as Open
// says. base makes the requests to the OAuth endpoints and carries those
// to the server (nil: the default transport).
func (c *OAuthConfig) Transport(serverURL string, base *http.Client, stderr io.Writer) (*oauth.Transport, error) {
	o, err := c.options(serverURL, base, stderr)
	if err != nil {
		return nil, err
	}
	return oauth.New(o)
}

// SignIn signs in with c to the server at serverURL (Transport, the
// sign-in said on stderr) and returns the transport, whose cache then
// holds the token.
func (c *OAuthConfig) SignIn(ctx context.Context, serverURL string, stderr io.Writer) (*oauth.Transport, error) {
	t, err := c.Transport(serverURL, nil, stderr)
	if err != nil {
		return nil, err
	}
	if err := t.Authorize(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

func (c *OAuthConfig) options(serverURL string, base *http.Client, stderr io.Writer) (oauth.Options, error) {
	var secret string
	if c.SecretEnv != "" {
		var ok bool
		if secret, ok = os.LookupEnv(c.SecretEnv); !ok || secret == "" {
			return oauth.Options{}, &SecretEnvError{Name: c.SecretEnv}
		}
	}
	open := c.Open
	if open == nil {
		open = oauth.OpenBrowser
	}
	if c.NoBrowser {
		open = nil
	}
	return oauth.Options{
		ServerURL:         serverURL,
		ClientID:          c.ClientID,
		ClientMetadataURL: c.MetadataURL,
		ClientSecret:      secret,
		Scopes:            c.Scopes,
		RedirectPort:      c.RedirectPort,
		CacheDir:          c.CacheDir,
		Open:              open,
		Stderr:            stderr,
		HTTPClient:        base,
	}, nil
}

// sessionClient is the HTTP client of the bridge under cfg.OAuth: the token
// from the cache (mcpsign signed in before the hand-over), refreshed when
// it expired or the server refused it. A new sign-in during the session
// opens the browser; with NoBrowser nobody would see its URL in time (the
// host keeps the proxy's stderr in a log), so the session fails instead
// (oauth.ErrSignInNeeded, reported by oauthError).
func sessionClient(cfg *Config, stderr io.Writer) (*http.Client, error) {
	if cfg.OAuth == nil {
		return nil, nil
	}
	if cfg.URL == "" {
		return nil, errors.New("OAuth is for a remote server's URL, not a command")
	}
	o, err := cfg.OAuth.options(cfg.URL, nil, stderr)
	if err != nil {
		return nil, err
	}
	o.NoSignIn = cfg.OAuth.NoBrowser
	t, err := oauth.New(o)
	if err != nil {
		return nil, err
	}
	return t.Client(), nil
}

// oauthError is the one line that ends a session whose OAuth token the
// server refused and that could not get another: what failed (the oauth
// package's message names the server and never a secret) and what to do.
// It returns nil when ce is not about OAuth.
func oauthError(ce *proxy.ConnectError) error {
	err := ce.Err
	switch {
	case err == nil:
		return nil
	case errors.Is(err, oauth.ErrSignInNeeded):
		return fmt.Errorf("%w; restart the server in the host: mcpsign proxy signs in again before the session", err)
	case errors.Is(err, oauth.ErrDenied), errors.Is(err, oauth.ErrRejected), errors.Is(err, oauth.ErrToken),
		errors.Is(err, oauth.ErrNoMetadata), errors.Is(err, oauth.ErrNoRegistration), errors.Is(err, oauth.ErrConfig):
		return fmt.Errorf("%w; restart the server in the host to sign in again", err)
	}
	return nil
}
