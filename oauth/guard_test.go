package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/nofollow"
	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
	"github.com/mcpsign/mcpsign/oauth"
)

// TestRefreshNamesResource: every refresh, at start-up (an expired cached
// token) and in a session (the server refused a revoked token), names the
// server as the resource (RFC 8707), as the sign-in did; the authorization
// server of oauthtest issues a token for the resource asked for only, and
// its resource server takes only its own.
func TestRefreshNamesResource(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	dir := t.TempDir()
	b := &browser{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newTransport := func() *oauth.Transport {
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := newTransport()
	if err := tr.Authorize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name  string
		spoil func()
	}{
		{"at start-up, an expired token", func() {
			m := cached(t, tr.CachePath())
			tokenOf(m)["expiry"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
			data, _ := json.Marshal(m)
			if err := os.WriteFile(tr.CachePath(), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"in a session, a revoked token", func() {
			m := cached(t, tr.CachePath())
			as.Revoke(t, tokenOf(m)["access_token"].(string), m["client"].(map[string]any)["clientId"].(string))
		}},
	} {
		step.spoil()
		if err := newTransport().Authorize(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if b.opened() != 1 {
		t.Errorf("the browser was opened %d times: a refresh failed and a sign-in followed", b.opened())
	}
	refreshes := 0
	for _, g := range as.Grants() {
		if g.Resource != rs.URL {
			t.Errorf("a %s grant named resource %q, want %q", g.Type, g.Resource, rs.URL)
		}
		if g.Type == "refresh_token" {
			refreshes++
			// oauth2's refresh grant: no empty "code" or "redirect_uri"
			// of an authorization code exchange.
			if slices.Contains(g.Members, "code") || slices.Contains(g.Members, "redirect_uri") || !slices.Contains(g.Members, "refresh_token") {
				t.Errorf("a refresh grant sent the members %v", g.Members)
			}
		}
	}
	if refreshes != 2 || rs.WrongAudience.Load() != 0 {
		t.Errorf("%d refreshes (want 2), %d tokens of another audience sent", refreshes, rs.WrongAudience.Load())
	}
	if m := cached(t, tr.CachePath()); m["resource"] != rs.URL {
		t.Errorf("the cache records resource %v, want %q", m["resource"], rs.URL)
	}
}

// fakeServer is an MCP endpoint that answers 401 with a challenge naming
// its protected resource metadata, which names an authorization server
// whose metadata offers the PKCE methods given. It counts the requests to
// every path.
type fakeServer struct {
	*httptest.Server
	hits map[string]*atomic.Int64
}

func newFakeServer(t *testing.T, pkce []string) *fakeServer {
	t.Helper()
	f := &fakeServer{hits: map[string]*atomic.Int64{}}
	for _, p := range []string{"/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/register", "/authorize", "/token"} {
		f.hits[p] = new(atomic.Int64)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := f.hits[r.URL.Path]; c != nil {
			c.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+f.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			json.NewEncoder(w).Encode(map[string]any{"resource": f.URL + "/mcp", "authorization_servers": []string{f.URL}})
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": f.URL, "authorization_endpoint": f.URL + "/authorize",
				"token_endpoint": f.URL + "/token", "registration_endpoint": f.URL + "/register",
				"response_types_supported": []string{"code"}, "code_challenge_methods_supported": pkce})
		case "/register":
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"client_id": "c1", "redirect_uris": []string{"http://127.0.0.1/callback"}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestPKCES256Required: an authorization server whose metadata does not
// name S256 (only plain, or nothing) is refused before any registration
// or browser (docs/REMOTE.md "The sign-in, step by step").
func TestPKCES256Required(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		pkce []string
		ok   bool
	}{
		{"plain only", []string{"plain"}, false},
		{"s256 in lower case", []string{"s256", "plain"}, false},
		{"S256", []string{"plain", "S256"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeServer(t, tt.pkce)
			var opened atomic.Int64
			// The sign-in ends when the browser would open (its context is
			// cancelled), not at a short SignInTimeout: 2 s ran out before
			// the registration on a loaded machine. The timeout is a hang
			// bound.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tr, err := oauth.New(oauth.Options{ServerURL: f.URL + "/mcp", CacheDir: t.TempDir(), SignInTimeout: time.Minute,
				Open: func(context.Context, string) error { opened.Add(1); cancel(); return errors.New("no browser here") }})
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Authorize(ctx)
			if err == nil {
				t.Fatal("signed in with a server that issues no token")
			}
			refused := errors.Is(err, oauth.ErrNoMetadata) && strings.Contains(err.Error(), "S256")
			if tt.ok {
				if refused || f.hits["/register"].Load() != 1 || opened.Load() != 1 {
					t.Fatalf("S256 offered: %v (registrations %d, browser %d)", err, f.hits["/register"].Load(), opened.Load())
				}
				return
			}
			if !refused || f.hits["/register"].Load() != 0 || opened.Load() != 0 {
				t.Fatalf("got %v (registrations %d, browser %d); want the metadata refused for S256 before registering", err, f.hits["/register"].Load(), opened.Load())
			}
		})
	}
}

// redirectTo is a Base transport that sends every request, whatever its
// URL, to the server at addr: a server that looks public by its name.
type redirectTo struct{ addr string }

func (r redirectTo) RoundTrip(req *http.Request) (*http.Response, error) {
	c := req.Clone(req.Context())
	c.URL.Scheme, c.URL.Host, c.Host = "http", r.addr, ""
	return http.DefaultTransport.RoundTrip(c)
}

// TestMetadataAddressGuard: a server on a public address whose 401 names
// protected resource metadata on a loopback address does not make mcpsign
// fetch it (docs/REMOTE.md "Where mcpsign goes"); a server on loopback may (TestFlow).
func TestMetadataAddressGuard(t *testing.T) {
	t.Parallel()
	victim := newFakeServer(t, []string{"S256"})
	// The "public" server answers 401 naming the victim's metadata.
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+victim.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer public.Close()
	tr, err := oauth.New(oauth.Options{ServerURL: "https://mcp.example.invalid/mcp", CacheDir: t.TempDir(), SignInTimeout: 5 * time.Second,
		Base: redirectTo{public.Listener.Addr().String()},
		Open: func(context.Context, string) error { t.Error("a browser was opened"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Authorize(context.Background())
	if !errors.Is(err, oauth.ErrNoMetadata) {
		t.Fatalf("got %v, want ErrNoMetadata", err)
	}
	for p, n := range victim.hits {
		if n.Load() != 0 {
			t.Errorf("%d requests reached %s on loopback", n.Load(), p)
		}
	}
	if !strings.Contains(err.Error(), "may not send mcpsign to") {
		t.Errorf("the error does not say the address was refused: %v", err)
	}
}

// TestCacheNoSymlink: a symbolic link in the token cache, at the token
// file or at its lock (the cache may sit in a checked-out repository), is
// refused and never followed: nothing is created or read at its target.
func TestCacheNoSymlink(t *testing.T) {
	t.Parallel()
	for _, which := range []string{".lock", ""} {
		t.Run("link at <hex>.json"+which, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "elsewhere")
			tr, err := oauth.New(oauth.Options{ServerURL: "https://mcp.example.invalid/mcp", CacheDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, tr.CachePath()+which); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = tr.Authorize(ctx)
			if !errors.Is(err, nofollow.ErrSymlink) {
				t.Fatalf("got %v, want the link refused (nofollow.ErrSymlink)", err)
			}
			if _, serr := os.Lstat(target); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("something was created at the link's target: %v", serr)
			}
		})
	}
}
