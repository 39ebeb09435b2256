package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
	"github.com/mcpsign/mcpsign/oauth"
	"github.com/mcpsign/mcpsign/source"
)

// browser plays the user's browser through oauthtest.Browser, recording
// every authorization code it carries to the redirect (they must never be
// printed).
type browser struct {
	mu    sync.Mutex
	codes []string
	opens int
}

func (b *browser) open(ctx context.Context, authURL string) error {
	b.mu.Lock()
	b.opens++
	b.mu.Unlock()
	c := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if code := req.URL.Query().Get("code"); code != "" {
			b.mu.Lock()
			b.codes = append(b.codes, code)
			b.mu.Unlock()
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (b *browser) opened() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens
}

// cached reads the one token file in dir.
func cached(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func tokenOf(m map[string]any) map[string]any { return m["token"].(map[string]any) }

// TestFlow drives the whole life of a token against zitadel's provider and
// go-sdk's resource server: sign-in with dynamic registration and PKCE, a
// listing, the cache (0600) used by a second run, refresh of an expired
// token, refresh after the server rejected a revoked access token, the
// clear error when everything is revoked and the user refuses, and a new
// sign-in reusing the registration. No secret ever appears in what was
// printed or returned.
func TestFlow(t *testing.T) {
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha", "beta"}})
	dir := filepath.Join(t.TempDir(), "cache")
	b := &browser{}
	var stderr bytes.Buffer
	var said []string // every error message
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	newTransport := func(open func(context.Context, string) error) *oauth.Transport {
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: open, Stderr: &stderr, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	noBrowser := func(context.Context, string) error {
		t.Error("the browser was opened although a cached token should do")
		return errors.New("no")
	}
	list := func(tr *oauth.Transport) {
		t.Helper()
		snap, err := source.Load(ctx, source.Spec{URL: rs.URL}, source.Options{HTTPClient: tr.Client(), Timeout: 20 * time.Second})
		if err != nil {
			said = append(said, err.Error())
			t.Fatalf("listing: %v", err)
		}
		if len(snap.Tools) != 2 {
			t.Fatalf("listed %d tools, want 2", len(snap.Tools))
		}
	}

	// 1. First run: sign in, then list.
	tr := newTransport(b.open)
	if err := tr.Authorize(ctx); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	list(tr)
	if b.opened() != 1 || as.Registrations.Load() != 1 || as.CodeExchanges.Load() != 1 {
		t.Fatalf("opens %d, registrations %d, code exchanges %d; want 1 each", b.opened(), as.Registrations.Load(), as.CodeExchanges.Load())
	}
	fi, err := os.Stat(tr.CachePath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", di.Mode().Perm())
	}
	first := cached(t, tr.CachePath())
	tok := tokenOf(first)
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if access == "" || refresh == "" {
		t.Fatalf("cached token lacks an access or refresh token: %v", tok)
	}
	clientID := first["client"].(map[string]any)["clientId"].(string)
	secrets := []string{access, refresh}

	// 2. Second run: the cache, no browser, no registration.
	tr = newTransport(noBrowser)
	if err := tr.Authorize(ctx); err != nil {
		t.Fatalf("Authorize from the cache: %v", err)
	}
	list(tr)
	if as.CodeExchanges.Load() != 1 || as.Refreshes.Load() != 0 {
		t.Fatalf("second run: code exchanges %d, refreshes %d; want 1, 0", as.CodeExchanges.Load(), as.Refreshes.Load())
	}

	// 3. An expired token is refreshed before it is sent (no Authorize:
	// the listing's own requests do it).
	m := cached(t, tr.CachePath())
	tokenOf(m)["expiry"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
	data, _ := json.Marshal(m)
	if err := os.WriteFile(tr.CachePath(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := rs.Refused.Load()
	list(newTransport(noBrowser))
	if as.Refreshes.Load() != 1 {
		t.Fatalf("refreshes %d after expiry, want 1", as.Refreshes.Load())
	}
	if rs.Refused.Load() != refused {
		t.Errorf("the expired token was sent: %d refusals", rs.Refused.Load()-refused)
	}
	tok = tokenOf(cached(t, tr.CachePath()))
	if tok["access_token"] == access {
		t.Fatal("the refreshed token was not cached")
	}
	access, refresh = tok["access_token"].(string), tok["refresh_token"].(string)
	secrets = append(secrets, access, refresh)

	// 4. The server rejects a revoked access token: refreshed, then listed.
	as.Revoke(t, access, clientID)
	list(newTransport(noBrowser))
	if as.Refreshes.Load() != 2 || rs.Refused.Load() == refused {
		t.Fatalf("after revocation: refreshes %d (want 2), refusals %d", as.Refreshes.Load(), rs.Refused.Load()-refused)
	}
	tok = tokenOf(cached(t, tr.CachePath()))
	access, refresh = tok["access_token"].(string), tok["refresh_token"].(string)
	secrets = append(secrets, access, refresh)

	// 5. Everything revoked and the user refuses: one clear line.
	as.Revoke(t, refresh, clientID)
	as.Deny(true)
	tr = newTransport(b.open)
	err = tr.Authorize(ctx)
	if !errors.Is(err, oauth.ErrDenied) {
		t.Fatalf("Authorize after revocation and refusal: %v, want ErrDenied", err)
	}
	said = append(said, err.Error())
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, rs.URL) || !strings.Contains(msg, "access_denied") {
		t.Errorf("error %q: want one line naming the server and the refusal", msg)
	}

	// 6. The user agrees: a new sign-in, with the registration reused.
	as.Deny(false)
	if err := tr.Authorize(ctx); err != nil {
		t.Fatalf("Authorize after refusal: %v", err)
	}
	list(tr)
	if as.CodeExchanges.Load() != 2 {
		t.Errorf("code exchanges %d, want 2", as.CodeExchanges.Load())
	}
	if as.Registrations.Load() != 1 {
		t.Errorf("registrations %d: the cached registration was not reused", as.Registrations.Load())
	}
	tok = tokenOf(cached(t, tr.CachePath()))
	secrets = append(secrets, tok["access_token"].(string), tok["refresh_token"].(string))

	// 7. The authorization server forgot the client (its login never comes
	// back): the sign-in fails, the registration is dropped, and the next
	// sign-in registers anew.
	as.Forget(clientID)
	m = cached(t, tr.CachePath())
	delete(m, "token")
	data, _ = json.Marshal(m)
	if err := os.WriteFile(tr.CachePath(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	short, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open, Stderr: &stderr, SignInTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = short.Authorize(ctx)
	if !errors.Is(err, oauth.ErrDenied) || !strings.Contains(err.Error(), "registers anew") {
		t.Fatalf("sign-in with a forgotten client: %v", err)
	}
	said = append(said, err.Error())
	tr = newTransport(b.open)
	if err := tr.Authorize(ctx); err != nil {
		t.Fatalf("sign-in after the registration was dropped: %v", err)
	}
	if as.Registrations.Load() != 2 {
		t.Errorf("registrations %d, want 2", as.Registrations.Load())
	}
	tok = tokenOf(cached(t, tr.CachePath()))
	secrets = append(secrets, tok["access_token"].(string), tok["refresh_token"].(string))

	// No secret in anything printed or returned, nor in the lock file.
	b.mu.Lock()
	secrets = append(secrets, b.codes...)
	b.mu.Unlock()
	if len(b.codes) != 3 {
		t.Errorf("%d codes seen, want 3", len(b.codes))
	}
	lock, _ := os.ReadFile(tr.CachePath() + ".lock")
	out := stderr.String() + "\n" + strings.Join(said, "\n") + "\n" + string(lock)
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("a secret (%.6s…) appears in the output:\n%s", s, out)
		}
	}
	t.Logf("stderr:\n%s\nerrors:\n%s", stderr.String(), strings.Join(said, "\n"))
	if !strings.Contains(stderr.String(), "open this URL in a browser") {
		t.Errorf("the authorization URL was not printed:\n%s", stderr.String())
	}
}

// TestNoMetadata: a 401 with no OAuth metadata is one line that names the
// server and what is missing.
func TestNoMetadata(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{NoMetadata: true})
	tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: t.TempDir(), Open: func(context.Context, string) error {
		t.Error("a browser was opened")
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Authorize(context.Background())
	if !errors.Is(err, oauth.ErrNoMetadata) {
		t.Fatalf("got %v, want ErrNoMetadata", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, rs.URL) || !strings.Contains(msg, "RFC 9728") {
		t.Errorf("message %q", msg)
	}
	// The listing through the transport fails the same way.
	_, err = source.Load(context.Background(), source.Spec{URL: rs.URL}, source.Options{HTTPClient: tr.Client(), Timeout: 10 * time.Second})
	if !errors.Is(err, oauth.ErrNoMetadata) {
		t.Fatalf("listing: got %v, want ErrNoMetadata", err)
	}
}

// TestOriginOnly: the token goes to the server's origin only.
func TestOriginOnly(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	})
	server := httptest.NewServer(h)
	defer server.Close()
	other := httptest.NewServer(h)
	defer other.Close()
	dir := t.TempDir()
	tr, err := oauth.New(oauth.Options{ServerURL: server.URL + "/mcp", CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	file := `{"kind":"mcpsign.oauth-token","cacheVersion":1,"server":"x","issuer":"http://127.0.0.1","client":{"clientId":"c","registration":"dynamic","redirectUri":"http://127.0.0.1:1/callback","tokenEndpoint":"http://127.0.0.1:1/token","authStyle":0},"token":{"access_token":"AT-secret","token_type":"Bearer","expiry":"` + exp + `"}}`
	if err := os.WriteFile(tr.CachePath(), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	c := tr.Client()
	for _, u := range []string{server.URL + "/mcp", other.URL + "/x"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	su, _ := url.Parse(server.URL)
	ou, _ := url.Parse(other.URL)
	want := []string{su.Host + " Bearer AT-secret", ou.Host + " "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// TestOptions refuses bad options before any I/O.
func TestOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []oauth.Options{
		{ServerURL: "ftp://host/x"},
		{ServerURL: "http://mcp.example.com/mcp"},
		{ServerURL: "https://user:pw@host/mcp"},
		{ServerURL: "https://host/mcp", RedirectPort: 70000},
		{ServerURL: "https://host/mcp", Scopes: []string{"a b"}},
	} {
		if _, err := oauth.New(o); !errors.Is(err, oauth.ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", o, err)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// TestConcurrentSignIn: two clients of one server and cache (two mcpsign
// processes, say) that need a sign-in at once sign in once: the second
// waits on the cache's file lock and takes the first one's token.
func TestConcurrentSignIn(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha", "beta"}})
	dir := t.TempDir()
	b := &browser{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		go func() { errs <- tr.Authorize(ctx) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if b.opened() != 1 || as.CodeExchanges.Load() != 1 {
		t.Errorf("browser opened %d times, %d code exchanges; want 1 each", b.opened(), as.CodeExchanges.Load())
	}
}

// TestHostileTokenEndpoint: a token endpoint that echoes what it got (the
// code, the PKCE verifier) in its error leaves none of it in the message.
func TestHostileTokenEndpoint(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	as.EchoTokenErrors.Store(true)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{})
	b := &browser{}
	var stderr bytes.Buffer
	tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: t.TempDir(), Open: b.open, Stderr: &stderr, SignInTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Authorize(context.Background())
	if !errors.Is(err, oauth.ErrToken) {
		t.Fatalf("got %v, want ErrToken", err)
	}
	if len(b.codes) != 1 {
		t.Fatalf("%d codes", len(b.codes))
	}
	out := err.Error() + "\n" + stderr.String()
	for _, s := range []string{b.codes[0], "code_verifier", "refused: "} {
		if strings.Contains(out, s) {
			t.Errorf("the output holds %q:\n%s", s, out)
		}
	}
	if !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("message %q lacks the status and error code", err)
	}
}

// TestGoSDKClient: the transport under go-sdk's own Streamable HTTP client
// (what a Go host or the bridge uses): the client signs in on its first
// request's 401, without Authorize, and lists the tools.
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha", "beta"}})
	b := &browser{}
	tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: t.TempDir(), Open: b.open, SignInTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.URL, HTTPClient: tr.Client()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || b.opened() != 1 {
		t.Errorf("%d tools, %d sign-ins; want 2, 1", len(res.Tools), b.opened())
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPreregisteredClient: a client registered beforehand (no dynamic
// registration), public or confidential, on the fixed redirect port it was
// registered with; the secret appears in no output.
func TestPreregisteredClient(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"", "s3cret-of-the-client"} {
		as := oauthtest.NewAS(t)
		rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
		port := freePort(t)
		as.Register("mcpsign-ci", secret, "http://127.0.0.1:"+strconv.Itoa(port)+"/callback")
		b := &browser{}
		var stderr bytes.Buffer
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: t.TempDir(), ClientID: "mcpsign-ci", ClientSecret: secret,
			RedirectPort: port, Open: b.open, Stderr: &stderr, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Authorize(context.Background()); err != nil {
			t.Fatalf("confidential %v: %v", secret != "", err)
		}
		if as.Registrations.Load() != 0 || as.CodeExchanges.Load() != 1 {
			t.Errorf("registrations %d, code exchanges %d; want 0, 1", as.Registrations.Load(), as.CodeExchanges.Load())
		}
		if secret != "" && strings.Contains(stderr.String(), secret) {
			t.Error("the client secret was printed")
		}
		// A wrong secret: the token endpoint refuses, and says so without it.
		if secret != "" {
			bad, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: t.TempDir(), ClientID: "mcpsign-ci", ClientSecret: "wrong-secret-value",
				RedirectPort: port, Open: b.open, SignInTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = bad.Authorize(context.Background())
			if !errors.Is(err, oauth.ErrToken) || strings.Contains(err.Error(), "wrong-secret-value") {
				t.Errorf("wrong secret: %v", err)
			}
		}
	}
}

// TestClientMetadataDocument: with a client ID metadata document (its URL
// is the client ID) and an authorization server that supports them, no
// registration; one that does not falls back to dynamic registration.
func TestClientMetadataDocument(t *testing.T) {
	t.Parallel()
	var docURL string
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"client_id":                  docURL,
			"client_name":                "mcpsign",
			"redirect_uris":              []string{"http://127.0.0.1/callback"}, // any port (RFC 8252)
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none",
		})
	}))
	defer doc.Close()
	docURL = doc.URL + "/mcpsign/client.json"
	for _, supported := range []bool{true, false} {
		as := oauthtest.NewAS(t)
		if supported {
			as.AcceptClientMetadata(doc.Client())
		}
		rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
		dir := t.TempDir()
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, ClientMetadataURL: docURL, Open: (&browser{}).open, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Authorize(context.Background()); err != nil {
			t.Fatalf("supported %v: %v", supported, err)
		}
		client := cached(t, tr.CachePath())["client"].(map[string]any)
		if supported {
			if as.Registrations.Load() != 0 || as.MetadataFetches.Load() == 0 || client["clientId"] != docURL || client["registration"] != "metadata-document" {
				t.Errorf("registrations %d, fetches %d, cached client %v", as.Registrations.Load(), as.MetadataFetches.Load(), client)
			}
		} else if as.Registrations.Load() != 1 || client["registration"] != "dynamic" {
			t.Errorf("without support: registrations %d, cached client %v", as.Registrations.Load(), client)
		}
	}
}

// TestNoSignIn: with NoSignIn a refusal that the cache and a refresh do not
// cure is ErrSignInNeeded at once, no browser opened; a token another
// process cached meanwhile is taken.
func TestNoSignIn(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	dir := t.TempDir()
	b := &browser{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	quiet, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open, Stderr: &stderr, NoSignIn: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := quiet.Authorize(ctx); !errors.Is(err, oauth.ErrSignInNeeded) || !strings.Contains(err.Error(), "no refresh token is cached") {
		t.Fatalf("empty cache: %v, want ErrSignInNeeded", err)
	}
	signIn := func() {
		t.Helper()
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Authorize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	signIn()
	if err := quiet.Authorize(ctx); err != nil {
		t.Fatalf("with the token another process cached: %v", err)
	}
	m := cached(t, filepath.Join(dir, firstJSON(t, dir)))
	as.Revoke(t, tokenOf(m)["refresh_token"].(string), m["client"].(map[string]any)["clientId"].(string))
	opens := b.opened()
	err = quiet.Authorize(ctx)
	if !errors.Is(err, oauth.ErrSignInNeeded) || !errors.Is(err, oauth.ErrToken) {
		t.Fatalf("revoked: %v, want ErrSignInNeeded from a refused refresh", err)
	}
	if b.opened() != opens {
		t.Error("a browser was opened under NoSignIn")
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q: the error says it all", stderr.String())
	}
	signIn()
	if err := quiet.Authorize(ctx); err != nil {
		t.Fatalf("after a sign-in elsewhere: %v", err)
	}
}

func firstJSON(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v", files)
	}
	return filepath.Base(files[0])
}

// TestResourceWithoutMetadata: a server with no protected resource
// metadata, whose root is the authorization server (the 2025-03-26
// arrangement). go-sdk's sign-in then asks for a token for the server's
// full URL (auth.AuthorizationCodeHandler: the fallback resource is the
// request's URL), and the cache records exactly that, so a refresh asks
// for the same audience, not the wider one of the server's root.
func TestResourceWithoutMetadata(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{AtIssuer: true, Tools: []string{"alpha"}})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := &browser{}
	newTransport := func() *oauth.Transport {
		tr, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: dir, Open: b.open, SignInTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	list := func(tr *oauth.Transport) {
		t.Helper()
		snap, err := source.Load(ctx, source.Spec{URL: rs.URL}, source.Options{HTTPClient: tr.Client(), Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		if len(snap.Tools) != 1 {
			t.Fatalf("listed %d tools, want 1", len(snap.Tools))
		}
	}
	tr := newTransport()
	if err := tr.Authorize(ctx); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	list(tr)
	m := cached(t, tr.CachePath())
	if got := m["resource"]; got != rs.URL {
		t.Fatalf("cached resource %v, want the server's URL %s, which go-sdk asked a token for", got, rs.URL)
	}
	// An expired token: refreshed for the same resource, and taken.
	tokenOf(m)["expiry"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
	data, _ := json.Marshal(m)
	if err := os.WriteFile(tr.CachePath(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	list(newTransport())
	var refreshes []oauthtest.Grant
	for _, g := range as.Grants() {
		if g.Type == "refresh_token" {
			refreshes = append(refreshes, g)
		}
		if g.Resource != rs.URL {
			t.Errorf("a %s grant asked for resource %q, want %q", g.Type, g.Resource, rs.URL)
		}
	}
	if len(refreshes) != 1 || as.CodeExchanges.Load() != 1 || b.opened() != 1 || rs.WrongAudience.Load() != 0 {
		t.Errorf("refreshes %v, code exchanges %d, browser opened %d times, %d tokens of another audience sent; want one refresh, one sign-in, none",
			refreshes, as.CodeExchanges.Load(), b.opened(), rs.WrongAudience.Load())
	}
}
