package options

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/source"
)

// OAuthOptions are the flags of the OAuth sign-in to a remote server
// (docs/REMOTE.md "Authentication"). The flags but --oauth are an
// OAuthConfig, which 'mcpsign proxy' hands over to mcpsign-proxy as it is.
type OAuthOptions struct {
	Enabled bool
	proxycmd.OAuthConfig
}

// AddFlags adds the OAuth flags to fs.
func (o *OAuthOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "oauth", false, "sign in to a Streamable HTTP server that asks for OAuth (401): browser sign-in once, then the cached token, refreshed when it expires")
	fs.StringVar(&o.ClientID, "oauth-client-id", "", "a client ID registered with the server's authorization server (default: dynamic client registration)")
	fs.StringVar(&o.MetadataURL, "oauth-client-metadata-url", "", "the https URL of a client ID metadata document to sign in as, where the authorization server supports them (else dynamic client registration)")
	fs.StringVar(&o.SecretEnv, "oauth-client-secret-env", "", "environment variable that holds the secret of --oauth-client-id, for a confidential client (never printed)")
	fs.StringSliceVar(&o.Scopes, "oauth-scope", nil, "OAuth scopes to ask for instead of those the server names (repeatable or comma-separated)")
	fs.IntVar(&o.RedirectPort, "oauth-redirect-port", 0, "loopback port of the sign-in redirect http://127.0.0.1:PORT/callback (default: the cached registration's, else random)")
	fs.BoolVar(&o.NoBrowser, "no-browser", false, "with --oauth, open no browser for the sign-in: its URL is printed on stderr only")
	fs.StringVar(&o.CacheDir, "oauth-cache-dir", "", "directory of the OAuth token cache (default: the user's config directory, mcpsign/oauth)")
}

// Config returns the configuration of the flags for the hand-over to
// mcpsign-proxy (no secret in it), or nil without --oauth.
func (o *OAuthOptions) Config() *proxycmd.OAuthConfig {
	if !o.Enabled {
		return nil
	}
	c := o.OAuthConfig
	c.Open = nil
	return &c
}

// OAuthSecretFlag says a *proxycmd.SecretEnvError with its flag.
func OAuthSecretFlag(err error) error {
	if errors.As(err, new(*proxycmd.SecretEnvError)) {
		return fmt.Errorf("--oauth-client-secret-env: %w", err)
	}
	return err
}

// CheckOAuthHeaders refuses --header Authorization beside --oauth: both
// would set the Authorization header.
func (o *OAuthOptions) CheckOAuthHeaders(headers []string) error {
	if o.Enabled && mcpwire.HasHeader(headers, "Authorization") {
		return errors.New("--oauth and --header Authorization both set the Authorization header: give one")
	}
	return nil
}

// Authorize signs in to a source that needs OAuth (--oauth) and returns the
// client for source.Options.HTTPClient, whose transport sends the token;
// nil without --oauth. Call it before Options: the sign-in waits for the
// user in the browser, which must count neither against --timeout nor under
// the progress display.
func (o *SourceOptions) Authorize(ctx context.Context, spec source.Spec, open func(context.Context, string) error, stderr io.Writer) (*http.Client, error) {
	if !o.OAuth.Enabled {
		return nil, nil
	}
	if spec.URL == "" {
		return nil, errors.New("--oauth is for a Streamable HTTP URL, not a command or a file")
	}
	if err := o.OAuth.CheckOAuthHeaders(o.Headers); err != nil {
		return nil, err
	}
	if o.OAuth.SecretEnv != "" && o.OAuth.ClientID == "" {
		return nil, errors.New("--oauth-client-secret-env needs --oauth-client-id")
	}
	c := o.OAuth.OAuthConfig
	c.Open = open
	t, err := c.SignIn(ctx, spec.URL, stderr)
	if err != nil {
		return nil, OAuthSecretFlag(err)
	}
	return t.Client(), nil
}
