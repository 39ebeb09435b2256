// Package oauthtest runs, on 127.0.0.1 for tests, an OAuth 2.1 authorization
// server (zitadel/oidc's certified OpenID provider, pkg/op, over its example
// in-memory storage) with dynamic client registration, and a real MCP
// server (go-sdk) behind a resource server that checks the bearer token
// (go-sdk's auth.RequireBearerToken) and publishes protected resource
// metadata (RFC 9728).
//
// It is test infrastructure: every user who reaches the login page is
// signed in as the test user without a password. The mcpsign binaries never
// link it (oauth's TestLean checks).
package oauthtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is the test user every sign-in is for.
const (
	User     = "test-user2"
	password = "verysecure"
)

// AS is the authorization server.
type AS struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT.
	Issuer string
	// Registrations counts dynamic client registrations, CodeExchanges
	// authorization code grants, Refreshes refresh token grants.
	Registrations, CodeExchanges, Refreshes atomic.Int64
	// MetadataFetches counts the client ID metadata documents read.
	MetadataFetches atomic.Int64

	// EchoTokenErrors makes the token endpoint refuse every request with
	// an error whose description and body echo the form it got (the code,
	// the PKCE verifier, a refresh token): a hostile or careless server.
	EchoTokenErrors atomic.Bool

	provider *op.Provider
	store    *store
	mux      *http.ServeMux // NewRS adds /mcp for RSOptions.AtIssuer
	// deny makes the login page refuse (the user said no).
	deny atomic.Bool

	// audience is the resource (RFC 8707) each access token was issued
	// for: the "resource" of the grant that issued it, "" when the grant
	// named none (a token for any audience, which the RS refuses).
	audMu    sync.Mutex
	audience map[string]string
	grants   []Grant
}

// Grant is one token grant the authorization server answered.
type Grant struct {
	// Type is the grant_type: authorization_code or refresh_token.
	Type string
	// Resource is the grant's resource parameter (RFC 8707), "" if none.
	Resource string
	// OK reports whether a token was issued.
	OK bool
	// Members are the names of the form's members, sorted (values are
	// secrets: not kept).
	Members []string
}

// Grants returns the token grants so far, in order.
func (a *AS) Grants() []Grant {
	a.audMu.Lock()
	defer a.audMu.Unlock()
	return append([]Grant(nil), a.grants...)
}

// Audience is the resource the access token was issued for ("" for none,
// ok false for a token this server never issued).
func (a *AS) Audience(token string) (resource string, ok bool) {
	a.audMu.Lock()
	defer a.audMu.Unlock()
	resource, ok = a.audience[token]
	return resource, ok
}

// token is the token endpoint: the provider's, recording the resource
// each access token is issued for (the token is for that resource only).
func (a *AS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	resource := r.PostForm.Get("resource")
	rec := httptest.NewRecorder()
	a.provider.ServeHTTP(rec, r)
	var got struct {
		AccessToken string `json:"access_token"`
	}
	ok := rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &got) == nil && got.AccessToken != ""
	a.audMu.Lock()
	if ok {
		a.audience[got.AccessToken] = resource
	}
	a.grants = append(a.grants, Grant{Type: r.PostForm.Get("grant_type"), Resource: resource, OK: ok, Members: slices.Sorted(maps.Keys(r.PostForm))})
	a.audMu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// store is the example storage with dynamically registered clients and
// counters.
type store struct {
	*storage.Storage
	as      *AS
	mu      sync.Mutex
	clients map[string]*storage.Client
	secrets map[string]string // of the confidential clients among them
	cimd    *http.Client      // fetches client ID metadata documents; nil: not supported
}

func (s *store) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	s.mu.Lock()
	want, ok := s.secrets[id]
	s.mu.Unlock()
	if !ok {
		return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
	}
	if secret != want {
		return errors.New("invalid secret")
	}
	return nil
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	cimd := s.cimd
	s.mu.Unlock()
	if ok {
		return storage.RedirectGlobsClient(c), nil
	}
	if cimd != nil && strings.HasPrefix(id, "https://") {
		return s.fetchClient(ctx, cimd, id)
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

// fetchClient reads a client ID metadata document: a public native client
// whose client_id is the document's URL.
func (s *store) fetchClient(ctx context.Context, c *http.Client, id string) (op.Client, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc) != nil || doc.ClientID != id || len(doc.RedirectURIs) == 0 {
		return nil, errors.New("no usable client ID metadata document")
	}
	s.as.MetadataFetches.Add(1)
	return storage.RedirectGlobsClient(storage.NativeClient(id, doc.RedirectURIs...)), nil
}

func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	if current == "" {
		s.as.CodeExchanges.Add(1)
	} else {
		s.as.Refreshes.Add(1)
	}
	return s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
}

// NewAS starts an authorization server on 127.0.0.1, stopped when t ends.
func NewAS(t testing.TB) *AS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &AS{Issuer: "http://" + ln.Addr().String(), audience: map[string]string{}}
	a.store = &store{Storage: storage.NewStorageWithClients(storage.NewUserStore(a.Issuer), map[string]*storage.Client{}), as: a, clients: map[string]*storage.Client{}, secrets: map[string]string{}}
	var key [32]byte
	rand.Read(key[:])
	a.provider, err = op.NewOpenIDProvider(a.Issuer, &op.Config{
		CryptoKey:             key,
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
	}, a.store, op.WithAllowInsecure(), op.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /.well-known/openid-configuration", a.discovery)
	mux.Handle("/login/username", op.NewIssuerInterceptor(a.provider.IssuerFromRequest).HandlerFunc(a.login))
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		if !a.EchoTokenErrors.Load() {
			a.token(w, r)
			return
		}
		r.ParseForm()
		echo := r.Form.Encode()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "refused: " + echo, "error_uri": "https://as.example/" + echo})
	})
	mux.Handle("/", a.provider)
	a.mux = mux
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

// Register registers a client beforehand, as an administrator would: a
// public native client without secret, else a confidential one that
// authenticates with its secret (client_secret_basic).
func (a *AS) Register(clientID, secret string, redirectURIs ...string) {
	c := storage.NativeClient(clientID, redirectURIs...)
	if secret != "" {
		c = storage.WebClient(clientID, secret, redirectURIs...)
	}
	a.store.mu.Lock()
	a.store.clients[clientID] = c
	if secret != "" {
		a.store.secrets[clientID] = secret
	}
	a.store.mu.Unlock()
}

// AcceptClientMetadata makes the server accept client ID metadata
// documents (client IDs that are https URLs), fetched with c.
func (a *AS) AcceptClientMetadata(c *http.Client) {
	a.store.mu.Lock()
	a.store.cimd = c
	a.store.mu.Unlock()
}

// Forget drops a dynamically registered client, as an authorization
// server that was reset.
func (a *AS) Forget(clientID string) {
	a.store.mu.Lock()
	delete(a.store.clients, clientID)
	a.store.mu.Unlock()
}

// Deny makes every later sign-in fail as if the user refused it.
func (a *AS) Deny(on bool) { a.deny.Store(on) }

// discovery is the provider's OpenID discovery document with the
// registration endpoint added (zitadel's provider has none of its own).
func (a *AS) discovery(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	a.provider.ServeHTTP(rec, r)
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	doc["registration_endpoint"] = a.Issuer + "/register"
	a.store.mu.Lock()
	if a.store.cimd != nil {
		doc["client_id_metadata_document_supported"] = true
	}
	a.store.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// register is dynamic client registration (RFC 7591) of native public
// clients with loopback redirect URIs.
func (a *AS) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_client_metadata"}`)
		return
	}
	for _, u := range meta.RedirectURIs {
		if !strings.HasPrefix(u, "http://127.0.0.1:") && !strings.HasPrefix(u, "http://localhost:") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_redirect_uri"}`)
			return
		}
	}
	id := "dyn-" + rand.Text()
	a.store.mu.Lock()
	a.store.clients[id] = storage.NativeClient(id, meta.RedirectURIs...)
	a.store.mu.Unlock()
	a.Registrations.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{
		"client_id":                  id,
		"redirect_uris":              meta.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"client_name":                meta.ClientName,
	})
}

// login signs the test user in without asking (or refuses, after Deny)
// and sends the browser back to the provider.
func (a *AS) login(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("authRequestID")
	if a.deny.Load() {
		req, err := a.store.AuthRequestByID(r.Context(), id)
		if err != nil {
			http.Error(w, "unknown request", http.StatusBadRequest)
			return
		}
		op.AuthRequestError(w, r, req, oidc.ErrAccessDenied().WithDescription("the user refused"), a.provider)
		return
	}
	if err := a.store.CheckUsernamePassword(User, password, id); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(a.provider)(r.Context(), id), http.StatusFound)
}

// Revoke revokes a token at the revocation endpoint (RFC 7009), as the
// public client clientID; revoking a refresh token revokes its access
// token too.
func (a *AS) Revoke(t testing.TB, token, clientID string) {
	t.Helper()
	resp, err := http.PostForm(a.Issuer+"/revoke", url.Values{"token": {token}, "client_id": {clientID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoking: HTTP %d", resp.StatusCode)
	}
}

// Browser is an opener (oauth.Options.Open) that plays the user's
// browser: it follows the authorization URL through the provider's login
// to the loopback redirect.
func Browser(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

// RS is the MCP server behind a resource server that checks tokens with the
// authorization server's userinfo endpoint, and takes only a token issued
// for it: one whose grant named its URL as the resource (RFC 8707).
type RS struct {
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string
	// Accepted and Refused count the requests whose bearer token passed or
	// failed; WrongAudience those of Refused whose token was valid but
	// issued for another resource, or for none.
	Accepted, Refused, WrongAudience atomic.Int64
}

// RSOptions configure NewRS.
type RSOptions struct {
	// NoMetadata serves no protected resource metadata and a 401 with no
	// challenge: a server that wants credentials some other way.
	NoMetadata bool
	// AtIssuer serves the MCP server at the authorization server's own
	// origin (its /mcp), with no protected resource metadata and a Bearer
	// challenge without resource_metadata: the 2025-03-26 arrangement, in
	// which a client takes the server's root for the authorization server
	// and its full URL for the resource.
	AtIssuer bool
	// Tools are the names of the tools the MCP server offers.
	Tools []string
}

// NewRS starts the resource server on 127.0.0.1, stopped when t ends.
func NewRS(t testing.TB, a *AS, o RSOptions) *RS {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "oauth-test", Version: "1.0.0"}, nil)
	for _, name := range o.Tools {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: "a tool behind OAuth"},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	if o.AtIssuer {
		rs := &RS{URL: a.Issuer + "/mcp"}
		a.mux.Handle("/mcp", auth.RequireBearerToken(rs.verifier(a), &auth.RequireBearerTokenOptions{
			AllowMissingExpiration: true,
		})(mcpHandler))
		return rs
	}
	ts := httptest.NewUnstartedServer(nil)
	rs := &RS{URL: "http://" + ts.Listener.Addr().String() + "/mcp"}
	metaURL := "http://" + ts.Listener.Addr().String() + "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	if o.NoMetadata {
		mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
			rs.Refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		})
	} else {
		mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             rs.URL,
			AuthorizationServers: []string{a.Issuer},
			ScopesSupported:      []string{"openid"},
		}))
		mux.Handle("/mcp", auth.RequireBearerToken(rs.verifier(a), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL:    metaURL,
			AllowMissingExpiration: true, // the userinfo endpoint checks the expiry
		})(mcpHandler))
	}
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return rs
}

// verifier checks a bearer token with the authorization server's userinfo
// endpoint, and takes only a token issued for rs.URL.
func (rs *RS) verifier(a *AS) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Issuer+"/userinfo", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			rs.Refused.Add(1)
			return nil, auth.ErrInvalidToken
		}
		if aud, _ := a.Audience(token); aud != rs.URL {
			rs.Refused.Add(1)
			rs.WrongAudience.Add(1)
			return nil, auth.ErrInvalidToken
		}
		rs.Accepted.Add(1)
		return &auth.TokenInfo{Scopes: []string{"openid"}}, nil
	}
}
