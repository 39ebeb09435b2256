package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// signInLocked runs the authorization code flow for the refusal resp of
// req and caches the token. Under the cache's file lock it first rereads
// the cache: another process may have signed in meanwhile. The caller holds
// t.mu.
func (t *Transport) signInLocked(ctx context.Context, req *http.Request, resp *http.Response) error {
	return t.locked(ctx, func() error {
		disk, err := t.read()
		if err != nil {
			return err
		}
		if t.adoptCached(disk) {
			return nil
		}
		e, reused, err := t.signIn(ctx, req, resp, disk)
		if err != nil {
			if reused && !errors.Is(err, errAccessDenied) {
				// The authorization server may have forgotten the client
				// (a browser that never comes back looks the same): the
				// next sign-in registers anew rather than failing alike.
				if serr := t.save(&entry{}); serr == nil {
					t.entry = &entry{}
					t.gen++
					err = fmt.Errorf("%w (the cached client registration is dropped: the next sign-in registers anew)", err)
				}
			}
			return err
		}
		if err := t.save(e); err != nil {
			return err
		}
		t.entry = e
		t.gen++
		fmt.Fprintf(t.o.Stderr, "mcpsign: signed in to %s; the token is cached in %s\n", textsafe.Escape(t.server()), textsafe.Escape(t.path))
		return nil
	})
}

// signIn discovers the authorization server, picks the client (the given
// ID, the cached registration, or a new dynamic registration), and lets
// go-sdk run the flow with a loopback redirect.
//
// reused reports whether the cached registration was used.
func (t *Transport) signIn(ctx context.Context, req *http.Request, resp *http.Response, cached *entry) (e *entry, reused bool, err error) {
	asm, resource, err := t.discover(ctx, req, resp)
	if err != nil {
		return nil, false, err
	}
	reuse := cached.Client.ID != "" && cached.Client.Registration == "dynamic" && t.o.ClientID == "" &&
		sameIssuer(cached.Issuer, asm.Issuer)
	port := t.o.RedirectPort
	if port == 0 && reuse {
		port = redirectPort(cached.Client.RedirectURI)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil && t.o.RedirectPort == 0 && port != 0 {
		ln, err = net.Listen("tcp", "127.0.0.1:0") // the registered port is taken: register anew
	}
	if err != nil {
		return nil, false, fmt.Errorf("listening for the sign-in redirect on 127.0.0.1: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"

	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	var code string // scrubbed from errors
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		Client:              t.client,
		RequestRefreshToken: true,
		NewTokenSource: func(_ context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = c, tok
			return oauth2.StaticTokenSource(tok), nil
		},
		AuthorizationCodeFetcher: t.fetcher(ln, &code),
	}
	registration := "preregistered"
	switch {
	case t.o.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: t.o.ClientID, Issuer: asm.Issuer}
		if t.o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: t.o.ClientSecret}
		}
	case reuse && cached.Client.RedirectURI == redirect:
		registration, reused = "dynamic", true
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cached.Client.ID, Issuer: asm.Issuer}
		if cached.Client.Secret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cached.Client.Secret}
		}
	case t.o.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		registration = "metadata-document"
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: t.o.ClientMetadataURL}
	case asm.RegistrationEndpoint == "":
		return nil, false, fmt.Errorf("%w: %s (no registration_endpoint in its metadata, nor client ID metadata document support)", ErrNoRegistration, quoteText(asm.Issuer))
	default:
		registration = "dynamic"
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              t.o.ClientName,
		}}
	}
	if len(t.o.Scopes) > 0 {
		scopes := t.o.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s", ErrConfig, shortText(err.Error()))
	}
	err = h.Authorize(ctx, req, resp)
	if err == nil && (got.tok == nil || got.tok.AccessToken == "") {
		err = fmt.Errorf("%w: no access token in the answer", ErrToken)
	}
	if err != nil {
		secrets := []string{code, cached.Client.Secret, t.o.ClientSecret}
		if got.tok != nil {
			secrets = append(secrets, got.tok.AccessToken, got.tok.RefreshToken)
		}
		if got.cfg != nil {
			secrets = append(secrets, got.cfg.ClientSecret)
		}
		return nil, reused, scrubbed(t.flowError(ctx, err), secrets...)
	}
	return &entry{
		Issuer:   asm.Issuer,
		Resource: resource,
		Client: client{
			ID:           got.cfg.ClientID,
			Secret:       got.cfg.ClientSecret,
			Registration: registration,
			RedirectURI:  redirect,
			TokenURL:     got.cfg.Endpoint.TokenURL,
			AuthStyle:    got.cfg.Endpoint.AuthStyle,
			Scopes:       got.cfg.Scopes,
		},
		Token: got.tok,
	}, reused, nil
}

// flowError is go-sdk's error of a sign-in as a message of ours: typed
// errors by their codes, others by their first words.
func (t *Transport) flowError(ctx context.Context, err error) error {
	var regErr *oauthex.ClientRegistrationError
	switch {
	case errors.Is(err, ErrDenied):
		return fmt.Errorf("signing in to %s: %w", t.server(), err)
	case ctx.Err() != nil:
		return fmt.Errorf("signing in to %s: %w: not completed within the time limit", t.server(), ErrDenied)
	case errors.As(err, new(*oauth2.RetrieveError)):
		return fmt.Errorf("signing in to %s: exchanging the code: %w", t.server(), tokenError(err))
	case errors.As(err, &regErr):
		return fmt.Errorf("signing in to %s: %w: registering the client was refused (%s)", t.server(), ErrNoRegistration, quoteText(regErr.ErrorCode))
	}
	return fmt.Errorf("signing in to %s: %s", t.server(), shortText(err.Error()))
}

// discover finds the authorization server's metadata as go-sdk will
// (protected resource metadata from the challenge's resource_metadata, at
// the endpoint's path, at the root; else the server's root as the
// authorization server), refusing what go-sdk would otherwise guess: fixed
// /authorize, /token and /register endpoints when no metadata exists, and
// an authorization server whose metadata does not name PKCE S256. It
// returns the resource indicator go-sdk will ask a token for (RFC 8707),
// which the cache records and every refresh asks for again: the protected
// resource metadata's resource, else the URL of the refused request, the
// server's own (go-sdk v1.8.0's AuthorizationCodeHandler falls back to
// req.URL, not to the server's root, which would be a wider audience).
// Every fetch goes through t.client, held to the addresses the server's
// own allows (New).
func (t *Transport) discover(ctx context.Context, req *http.Request, resp *http.Response) (*oauthex.AuthServerMeta, string, error) {
	asm, resource, err := t.discoverMeta(ctx, req, resp)
	if err != nil {
		return nil, "", err
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, "", fmt.Errorf("the authorization server %s names no PKCE S256 in its code_challenge_methods_supported: %w (mcpsign signs in only with S256)", quoteText(asm.Issuer), ErrNoMetadata)
	}
	return asm, resource, nil
}

func (t *Transport) discoverMeta(ctx context.Context, req *http.Request, resp *http.Response) (*oauthex.AuthServerMeta, string, error) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, "", fmt.Errorf("%s answered %d with a WWW-Authenticate header that does not parse: %w", t.server(), resp.StatusCode, ErrNoMetadata)
	}
	var metaURL string
	for _, c := range cs {
		if u := c.Params["resource_metadata"]; u != "" {
			metaURL = u
			break
		}
	}
	// The server's URL as go-sdk takes it: the refused request's.
	res := req.URL.String()
	root := *t.resource
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	type try struct{ meta, resource string }
	var tries []try
	if metaURL != "" {
		tries = append(tries, try{metaURL, res})
	}
	atPath := root
	atPath.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(t.resource.Path, "/")
	atRoot := root
	atRoot.Path = "/.well-known/oauth-protected-resource"
	tries = append(tries, try{atPath.String(), res}, try{atRoot.String(), root.String()})
	asURL, resource := "", res
	var refused error // a metadata URL the address guard refused
	for _, tr := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, tr.meta, tr.resource, t.client)
		if errors.Is(err, netguard.ErrRefused) && refused == nil {
			refused = err
		}
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, "", fmt.Errorf("the protected resource metadata of %s names no authorization server: %w", t.server(), ErrNoMetadata)
		}
		asURL, resource = prm.AuthorizationServers[0], prm.Resource
		break
	}
	fromPRM := asURL != ""
	if !fromPRM && refused != nil {
		return nil, "", fmt.Errorf("%s answered %d and names OAuth metadata at an address it may not send mcpsign to (%s): %w", t.server(), resp.StatusCode, shortText(refused.Error()), ErrNoMetadata)
	}
	if !fromPRM {
		asURL = root.String()
	}
	asm, err := auth.GetAuthServerMetadata(ctx, asURL, t.client)
	if err != nil {
		return nil, "", fmt.Errorf("the authorization server metadata of %s: %s: %w", quoteText(asURL), shortText(err.Error()), ErrNoMetadata)
	}
	if asm == nil {
		if fromPRM {
			return nil, "", fmt.Errorf("the authorization server %s of %s publishes no metadata (RFC 8414 or OpenID Connect discovery): %w", quoteText(asURL), t.server(), ErrNoMetadata)
		}
		return nil, "", fmt.Errorf("%s answered %d but publishes %w: no protected resource metadata (RFC 9728) and no authorization server metadata at its root", t.server(), resp.StatusCode, ErrNoMetadata)
	}
	return asm, resource, nil
}

// sameIssuer compares issuer identifiers as RFC 8414 does, ignoring one
// trailing slash.
func sameIssuer(a, b string) bool {
	return a != "" && strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// redirectPort is the port of a cached loopback redirect URI, 0 if none.
func redirectPort(redirect string) int {
	u, err := url.Parse(redirect)
	if err != nil || u.Hostname() != "127.0.0.1" {
		return 0
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p <= 0 || p > 65535 {
		return 0
	}
	return p
}

// callback is what the browser brought to the redirect URI.
type callback struct {
	code, iss, errCode, errDesc string
}

// fetcher prints the authorization URL, opens it, and waits for the
// browser to come back to the loopback listener with a code for this
// request's state. Other requests to the listener are answered 400/404 and
// change nothing.
func (t *Transport) fetcher(ln net.Listener, code *string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, fmt.Errorf("the authorization URL does not parse")
		}
		state := u.Query().Get("state")
		results := make(chan callback, 1)
		srv := &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/callback" {
					http.NotFound(w, r)
					return
				}
				q := r.URL.Query()
				if state == "" || q.Get("state") != state {
					http.Error(w, "mcpsign: this is not the answer to the sign-in under way", http.StatusBadRequest)
					return
				}
				cb := callback{code: q.Get("code"), iss: q.Get("iss"), errCode: q.Get("error"), errDesc: q.Get("error_description")}
				if cb.code == "" && cb.errCode == "" {
					http.Error(w, "mcpsign: the answer holds neither a code nor an error", http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Cache-Control", "no-store")
				if cb.errCode != "" {
					fmt.Fprintln(w, "mcpsign: the sign-in was refused. You can close this tab.")
				} else {
					fmt.Fprintln(w, "mcpsign: signed in. You can close this tab and go back to the terminal.")
				}
				select {
				case results <- cb:
				default: // the first answer counts
				}
			}),
		}
		go srv.Serve(ln)
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			srv.Shutdown(sctx)
			cancel()
		}()
		fmt.Fprintf(t.o.Stderr, "mcpsign: %s asks you to sign in; open this URL in a browser:\n  %s\n", textsafe.Escape(t.server()), textsafe.Escape(args.URL))
		if t.o.Open != nil {
			if err := t.o.Open(ctx, args.URL); err != nil {
				fmt.Fprintf(t.o.Stderr, "mcpsign: could not open a browser (%s); open the URL above by hand\n", textsafe.Escape(shortText(err.Error())))
			}
		}
		select {
		case cb := <-results:
			if cb.errCode != "" {
				msg := quoteText(cb.errCode)
				if cb.errDesc != "" {
					msg += ": " + quoteText(cb.errDesc)
				}
				err := fmt.Errorf("%w: the authorization server answered %s", ErrDenied, msg)
				if cb.errCode == "access_denied" {
					err = &deniedError{err} // the server knows the client: the user said no
				}
				return nil, err
			}
			*code = cb.code
			return &auth.AuthorizationResult{Code: cb.code, State: state, Iss: cb.iss}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: no answer came back to the redirect within the time limit", ErrDenied)
		}
	}
}

// errAccessDenied marks a sign-in the user refused (access_denied): the
// authorization server knew the client, so its registration stays.
var errAccessDenied = errors.New("access denied")

type deniedError struct{ error }

func (e *deniedError) Unwrap() []error { return []error{e.error, errAccessDenied} }
