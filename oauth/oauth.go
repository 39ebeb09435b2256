package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// DefaultClientName is the client_name a dynamic registration asks for.
const DefaultClientName = "mcpsign"

// DefaultSignInTimeout bounds one sign-in: from the 401 to the token, the
// user's time in the browser included.
const DefaultSignInTimeout = 5 * time.Minute

// Options configure [New].
type Options struct {
	// ServerURL is the MCP endpoint (http or https), the protected
	// resource. Required. The token is sent to its origin only.
	ServerURL string
	// ClientName is the client_name of a dynamic client registration;
	// empty means [DefaultClientName].
	ClientName string
	// ClientID is a client pre-registered with the authorization server
	// (a public client: PKCE, no secret). Empty means dynamic client
	// registration (RFC 7591), which the authorization server must offer.
	ClientID string
	// ClientMetadataURL is the client's ID as a client ID metadata document:
	// an https URL, not the root, where the client's metadata (its name and
	// loopback redirect URIs) is published. Used when the authorization
	// server supports it (client_id_metadata_document_supported), else
	// dynamic registration is. Excludes ClientID.
	ClientMetadataURL string
	// ClientSecret is ClientID's secret, for a confidential client (it is
	// cached with the token, and never printed). Empty: a public client.
	ClientSecret string
	// Scopes, when not empty, are the scopes asked for instead of those
	// the server names (its WWW-Authenticate scope, else the protected
	// resource metadata's scopes_supported).
	Scopes []string
	// RedirectPort is the loopback port of the redirect URI
	// (http://127.0.0.1:PORT/callback). 0 means the port of the cached
	// registration when it is free, else a random one (a new registration).
	RedirectPort int
	// CacheDir holds the token files; empty means
	// os.UserConfigDir()/mcpsign/oauth. Created with mode 0700. A path
	// one of whose components is a symbolic link (below the user's home
	// directory when it is inside it, else below the root) is refused
	// before anything is read or created there: ErrCacheDir.
	CacheDir string
	// Open opens the authorization URL in a browser. Nil opens nothing:
	// the URL is printed on Stderr for the user to open. An error is
	// reported on Stderr and the sign-in goes on waiting for the URL to be
	// opened by hand.
	Open func(ctx context.Context, authorizationURL string) error
	// Stderr gets the authorization URL and one line a step of the
	// sign-in; nil means io.Discard. Nothing secret is ever written to it.
	Stderr io.Writer
	// HTTPClient makes the requests to the metadata, registration and
	// token endpoints (TLS roots, proxies); nil means a client with the
	// default transport. Those requests connect only to the addresses the
	// server's own host allows (netguard.ScopeOf): its transport must be
	// an *http.Transport (or nil), whose dialer is guarded. Its transport
	// is also the one requests to the server go through, unless Base is
	// set.
	HTTPClient *http.Client
	// Base carries the requests to the MCP server; nil means HTTPClient's
	// transport, else http.DefaultTransport.
	Base http.RoundTripper
	// SignInTimeout bounds one sign-in; 0 means [DefaultSignInTimeout].
	SignInTimeout time.Duration
	// NoSignIn makes a refusal that neither the cache nor a refresh cures
	// an error wrapping [ErrSignInNeeded] at once, instead of a sign-in
	// that would wait for a user nobody asks: for a process that signed in
	// before it started (the bridge, docs/PROXY.md "Remote servers") and
	// whose prompts nobody may see.
	NoSignIn bool
}

// Transport is an [http.RoundTripper] that authorizes the requests to one
// MCP server with an OAuth access token: from the cache, refreshed when it
// expired or the server rejected it, or from a new sign-in when the server
// answers 401 (or 403 insufficient_scope) and no refresh helps. Requests
// to other origins pass through untouched. Safe for concurrent use.
type Transport struct {
	o        Options
	base     http.RoundTripper
	client   *http.Client
	resource *url.URL
	origin   string
	path     string // the cache file

	mu    sync.Mutex
	entry *entry // nil until loaded
	gen   int    // counts the tokens taken into use
	// refreshed is the last generation a refresh was tried on: one
	// refresh a token, then a sign-in.
	refreshed int
}

// New returns the transport for o.ServerURL. It does no I/O: the cache is
// read on the first request.
func New(o Options) (*Transport, error) {
	u, err := url.Parse(o.ServerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: the server URL is not an http(s) URL with a host", ErrConfig)
	}
	// A token is a credential: never over plain http off loopback, whatever
	// else allows plain http (netguard.CheckServerURL, the one rule).
	if err := netguard.CheckServerURL(u, netguard.URLRule{Credentials: true}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: the server URL holds a user or password", ErrConfig)
	}
	if o.ClientMetadataURL != "" {
		m, err := url.Parse(o.ClientMetadataURL)
		if err != nil || m.Scheme != "https" || m.Host == "" || m.Path == "" || m.Path == "/" || m.User != nil || m.Fragment != "" {
			return nil, fmt.Errorf("%w: the client metadata URL is not an https URL with a path", ErrConfig)
		}
		if o.ClientID != "" {
			return nil, fmt.Errorf("%w: a client ID and a client metadata URL both name the client", ErrConfig)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return nil, fmt.Errorf("%w: a client secret without a client ID", ErrConfig)
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		return nil, fmt.Errorf("%w: redirect port %d is not a TCP port", ErrConfig, o.RedirectPort)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return nil, fmt.Errorf("%w: scope %s is not an OAuth scope token", ErrConfig, textsafe.RawQuote(s))
		}
	}
	if o.ClientName == "" {
		o.ClientName = DefaultClientName
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.SignInTimeout <= 0 {
		o.SignInTimeout = DefaultSignInTimeout
	}
	if o.CacheDir == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("%w: no directory for the token cache: %w", ErrConfig, err)
		}
		o.CacheDir = filepath.Join(dir, "mcpsign", "oauth")
	}
	t := &Transport{o: o, resource: u, origin: originOf(u)}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: time.Minute}
	}
	// The metadata, registration and token endpoints are URLs the server
	// names (its 401, its metadata): they are fetched only on the
	// addresses a server where it is may send mcpsign to
	// (netguard.ScopeOf, docs/REMOTE.md "Where mcpsign goes"), so that a
	// server on a public address cannot make mcpsign reach the user's
	// machine or network.
	guarded, err := netguard.Transport(c.Transport, netguard.ScopeOf(u.Hostname()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	t.client = &http.Client{Transport: guarded, Jar: c.Jar, Timeout: c.Timeout, CheckRedirect: c.CheckRedirect}
	t.base = o.Base
	if t.base == nil {
		t.base = c.Transport
	}
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	t.path = filepath.Join(o.CacheDir, cacheName(o.ServerURL, t.clientKey()))
	return t, nil
}

// CachePath is the file that holds the token of this server and client.
func (t *Transport) CachePath() string { return t.path }

// Client returns an *http.Client whose transport is t.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// clientKey names the client in the cache key: a pre-registered client ID,
// or the dynamic registration of a client name.
func (t *Transport) clientKey() string {
	if t.o.ClientID != "" {
		return "id:" + t.o.ClientID
	}
	if t.o.ClientMetadataURL != "" {
		return "metadata:" + t.o.ClientMetadataURL
	}
	return "dynamic:" + t.o.ClientName
}

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// RoundTrip sends req, with the access token when it goes to the server's
// origin. On a 401 (or a 403 insufficient_scope) it refreshes the token or
// signs in anew, then sends req once more; a second refusal is an error
// wrapping [ErrRejected].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	send := func(tok *oauth2.Token) (*http.Request, *http.Response, error) {
		r := req.Clone(ctx)
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			r.ContentLength = int64(len(body))
		}
		if tok != nil {
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := t.base.RoundTrip(r)
		return r, resp, err
	}
	tok, gen, err := t.token(ctx)
	if err != nil {
		return nil, err
	}
	r, resp, err := send(tok)
	if err != nil || !needsAuth(resp) {
		return resp, err
	}
	if err := t.recover(ctx, r, resp, gen); err != nil {
		return nil, err
	}
	tok, _, err = t.token(ctx)
	if err != nil {
		return nil, err
	}
	_, resp, err = send(tok)
	if err != nil || !needsAuth(resp) {
		return resp, err
	}
	drain(resp)
	return nil, t.scrub(fmt.Errorf("%w: %s answered %d to the new token", ErrRejected, t.server(), resp.StatusCode))
}

// Authorize makes sure a token the server accepts is at hand before the
// session starts, so that a sign-in (which waits for the user) does not
// run against the session's own time limit: it asks the server (an HTTP
// GET of the endpoint, as a client opening its event stream) with the
// cached token, and on a 401 refreshes or signs in, all bounded by ctx and
// Options.SignInTimeout. Any answer but 401/403 means the server accepts
// the request as it is.
func (t *Transport) Authorize(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.o.SignInTimeout)
	defer cancel()
	probe := func(tok *oauth2.Token) (*http.Request, *http.Response, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, t.o.ServerURL, nil)
		if err != nil {
			return nil, nil, err
		}
		r.Header.Set("Accept", "text/event-stream")
		if tok != nil {
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, nil, t.scrub(fmt.Errorf("asking %s: %w", t.server(), err))
		}
		return r, resp, nil
	}
	tok, gen, err := t.token(ctx)
	if err != nil {
		return err
	}
	r, resp, err := probe(tok)
	if err != nil {
		return err
	}
	if !needsAuth(resp) {
		drain(resp)
		return nil
	}
	if err := t.recover(ctx, r, resp, gen); err != nil {
		return err
	}
	tok, _, err = t.token(ctx)
	if err != nil {
		return err
	}
	_, resp, err = probe(tok)
	if err != nil {
		return err
	}
	drain(resp)
	if needsAuth(resp) {
		return t.scrub(fmt.Errorf("%w: %s answered %d to the new token", ErrRejected, t.server(), resp.StatusCode))
	}
	return nil
}

// needsAuth reports whether resp asks for (other) authorization: a 401, or
// a 403 whose Bearer challenge says insufficient_scope (step-up).
func needsAuth(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if err != nil {
			return false
		}
		for _, c := range cs {
			if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
				return true
			}
		}
	}
	return false
}

// drain reads a little of a body that is not needed and closes it, so
// that the connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// token returns the token to send (nil: none cached) and its generation,
// refreshing an expired one.
func (t *Transport) token(ctx context.Context) (*oauth2.Token, int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entry == nil {
		e, err := t.load(ctx)
		if err != nil {
			return nil, 0, err
		}
		t.entry = e
		t.gen++
	}
	tok := t.entry.Token
	if tok == nil || tok.AccessToken == "" {
		return nil, t.gen, nil
	}
	if !tok.Valid() && tok.RefreshToken != "" && t.refreshed != t.gen {
		// Expired: refresh before sending. A refused refresh leaves the
		// old token: the server's 401 then leads to a sign-in.
		if err := t.refreshLocked(ctx); err != nil {
			fmt.Fprintf(t.o.Stderr, "mcpsign: %s\n", textsafe.ShowError(t.scrub(err)))
			t.refreshed = t.gen
		}
	}
	return t.entry.Token, t.gen, nil
}

// recover gets a new token after the server refused the one of generation
// gen: nothing when another request already got one, else a refresh (once
// a generation), else a sign-in.
func (t *Transport) recover(ctx context.Context, req *http.Request, resp *http.Response, gen int) error {
	// Only the headers are needed; go-sdk closes the body it is given.
	head := &http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: http.NoBody, Request: req}
	drain(resp)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen {
		return nil
	}
	e := t.entry
	var refreshErr error
	if e != nil && e.Token != nil && e.Token.RefreshToken != "" && t.refreshed != gen && resp.StatusCode == http.StatusUnauthorized {
		t.refreshed = gen
		err := t.refreshLocked(ctx)
		if err == nil {
			return nil
		}
		refreshErr = t.scrub(err)
		if !t.o.NoSignIn {
			fmt.Fprintf(t.o.Stderr, "mcpsign: %s; signing in anew\n", textsafe.ShowError(refreshErr))
		}
	}
	if t.o.NoSignIn {
		return t.noSignInLocked(ctx, resp.StatusCode, refreshErr)
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.SignInTimeout)
	defer cancel()
	return t.signInLocked(ctx, req, head)
}

// noSignInLocked is recover under Options.NoSignIn: the token another
// process cached meanwhile, else an error wrapping ErrSignInNeeded that
// says why the refresh did not help. The caller holds t.mu.
func (t *Transport) noSignInLocked(ctx context.Context, status int, refreshErr error) error {
	return t.locked(ctx, func() error {
		disk, err := t.read()
		if err != nil {
			return err
		}
		if t.adoptCached(disk) {
			return nil
		}
		if refreshErr == nil {
			return fmt.Errorf("%w: %s answered %d and no refresh token is cached", ErrSignInNeeded, t.server(), status)
		}
		return fmt.Errorf("%w: %s answered %d; %w", ErrSignInNeeded, t.server(), status, refreshErr)
	})
}

// server names the server in messages: its URL without query or fragment,
// escaped.
func (t *Transport) server() string {
	return quoteText(netguard.ShownURL(t.resource))
}

// ErrConfig is wrapped by the errors of [New] about its options.
var ErrConfig = errors.New("OAuth options")

// ErrNoMetadata is wrapped by the error of a server that asks for
// authorization (401) but publishes no OAuth metadata that says where to
// get it: no protected resource metadata (RFC 9728) and no authorization
// server metadata at its root. Such a server takes its credentials some
// other way (a header).
var ErrNoMetadata = errors.New("no usable OAuth metadata")

// ErrNoRegistration is wrapped when the authorization server offers no way
// to register this client (no registration_endpoint) and no client ID was
// given.
var ErrNoRegistration = errors.New("the authorization server offers no dynamic client registration")

// ErrDenied is wrapped when the authorization server (or the user) refused
// the authorization request, or the sign-in did not complete in time.
var ErrDenied = errors.New("sign-in not completed")

// ErrRejected is wrapped when the server refuses the token that a refresh
// or a sign-in just produced.
var ErrRejected = errors.New("the server rejected the OAuth token")

// ErrSignInNeeded is wrapped when the server refused the token, no refresh
// helped, and [Options.NoSignIn] forbids a new sign-in.
var ErrSignInNeeded = errors.New("a new OAuth sign-in is needed")

// ErrToken is wrapped when the token endpoint refuses a code exchange or
// a refresh, or answers badly.
var ErrToken = errors.New("the token endpoint refused")

// ErrCacheDir is the error when the token cache directory cannot be used
// as it is given: a component of its path is a symbolic link (the error
// then holds a *nofollow.LinkError naming it; errors.Is(err,
// nofollow.ErrSymlink)).
var ErrCacheDir = errors.New("the token cache directory is refused")

// adoptCached takes the token in disk, the cache as just reread under its
// file lock, when it is valid and not the one held: another process signed
// in or refreshed meanwhile. The caller holds t.mu.
func (t *Transport) adoptCached(disk *entry) bool {
	held := t.entry
	if disk.Token != nil && disk.Token.Valid() && (held == nil || held.Token == nil || disk.Token.AccessToken != held.Token.AccessToken) {
		t.entry = disk
		t.gen++
		return true
	}
	return false
}
