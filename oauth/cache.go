package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/filelock"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/nofollow"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// cacheKind and cacheVersion mark a token file (docs/REMOTE.md "The token
// cache").
const (
	cacheKind    = "mcpsign.oauth-token"
	cacheVersion = 1
	maxCache     = 1 << 20
)

// entry is one token file: the client registered with the authorization
// server and the token it issued.
type entry struct {
	Kind         string `json:"kind"`
	CacheVersion int    `json:"cacheVersion"`
	Server       string `json:"server"`
	Issuer       string `json:"issuer"`
	// Resource is the resource indicator (RFC 8707) the token was granted
	// for at sign-in, sent again with every refresh; empty in a file of an
	// older mcpsign (a refresh then names the server URL).
	Resource string        `json:"resource,omitempty"`
	Client   client        `json:"client"`
	Token    *oauth2.Token `json:"token,omitempty"`
}

// client is what refreshes and later sign-ins need of the registration.
type client struct {
	ID           string           `json:"clientId"`
	Secret       string           `json:"clientSecret,omitempty"`
	Registration string           `json:"registration"` // "dynamic" or "preregistered"
	RedirectURI  string           `json:"redirectUri"`
	TokenURL     string           `json:"tokenEndpoint"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle"`
	Scopes       []string         `json:"scopes,omitempty"`
}

// cacheName is the file name of the token of one server URL and client.
func cacheName(serverURL, clientKey string) string {
	sum := sha256.Sum256([]byte(serverURL + "\n" + clientKey))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// load reads the cache file; a missing one is an empty entry, an unreadable
// or foreign one is reported on stderr and ignored (a sign-in replaces it).
func (t *Transport) load(ctx context.Context) (*entry, error) {
	var e *entry
	err := t.locked(ctx, func() error {
		var err error
		e, err = t.read()
		return err
	})
	return e, err
}

// read reads the cache file; the caller holds the file lock. A symbolic
// link (the cache may sit in a checked-out repository) or anything but a
// regular file there is refused, never followed (nofollow.Open).
func (t *Transport) read() (*entry, error) {
	f, err := nofollow.Open(t.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &entry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the token cache: %w (remove it to sign in anew)", err)
	}
	data, err := boundedfile.ReadAll(f, t.path, maxCache, nil)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the token cache: %w", err)
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Kind != cacheKind || e.CacheVersion != cacheVersion {
		fmt.Fprintf(t.o.Stderr, "mcpsign: ignoring the token cache %s: not an mcpsign token file of version %d\n", textsafe.Escape(t.path), cacheVersion)
		return &entry{}, nil
	}
	return &e, nil
}

// save writes e to the cache file, mode 0600 in a 0700 directory,
// atomically; the caller holds the file lock.
func (t *Transport) save(e *entry) error {
	e.Kind, e.CacheVersion, e.Server = cacheKind, cacheVersion, netguard.ShownURL(t.resource)
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(t.path, append(data, '\n'), atomicfile.Options{Perm: 0o600, Overwrite: true}); err != nil {
		return fmt.Errorf("writing the token cache: %w", err)
	}
	return nil
}

// locked runs fn holding the lock of the cache file, creating the cache
// directory (0700) first. The lock file is a sidecar that is never
// reached through a symbolic link (filelock.WithFile): a link planted
// there is refused, not followed to create a file at its target. The
// directory's own path is checked the same way, before and after it is
// created (checkCacheDir).
func (t *Transport) locked(ctx context.Context, fn func() error) error {
	if err := checkCacheDir(t.o.CacheDir); err != nil {
		return err
	}
	if err := os.MkdirAll(t.o.CacheDir, 0o700); err != nil {
		return fmt.Errorf("creating the token cache directory: %w", err)
	}
	if err := checkCacheDir(t.o.CacheDir); err != nil {
		return err
	}
	return filelock.WithFile(ctx, t.path+".lock", "another mcpsign is signing in to this server", fn)
}

// checkCacheDir refuses a cache directory any of whose components is a
// symbolic link (below the user's home directory when it is inside it,
// else below the root: nofollow.CheckDirs), with an error wrapping
// ErrCacheDir and a *nofollow.LinkError naming the component: the cache
// may be given inside a checked-out repository, where a link in the path
// would send the tokens, and the files created beside them, wherever its
// author chose (docs/REMOTE.md, "The token cache").
func checkCacheDir(dir string) error {
	home, _ := os.UserHomeDir()
	if err := nofollow.CheckDirs(dir, home); err != nil {
		return fmt.Errorf("%w: %w (give the directory by a path without links)", ErrCacheDir, err)
	}
	return nil
}

// config is the oauth2 configuration that refreshes e's token. It has no
// redirect URI: a refresh sends none.
func (e *entry) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     e.Client.ID,
		ClientSecret: e.Client.Secret,
		Endpoint:     oauth2.Endpoint{TokenURL: e.Client.TokenURL, AuthStyle: e.Client.AuthStyle},
		Scopes:       e.Client.Scopes,
	}
}

// refresh trades e's refresh token for a new token through oauth2's
// refresh grant (RFC 6749 section 6: grant_type, refresh_token, the client's
// authentication, no code), naming resource (RFC 8707) as the sign-in's
// authorization request and code exchange did, so that the authorization
// server issues a token for this server only, not one of a wider audience
// the server could replay elsewhere. oauth2's refreshing token source sends
// no extra parameter: c's transport adds resource to that one request's
// form (withResource).
func (e *entry) refresh(ctx context.Context, c *http.Client, resource string) (*oauth2.Token, error) {
	rc := *c
	rc.Transport = withResource{base: c.Transport, resource: resource}
	src := e.config().TokenSource(withClient(ctx, &rc), &oauth2.Token{RefreshToken: e.Token.RefreshToken})
	return src.Token()
}

// withResource adds the member "resource" to the form of a token request
// (a POST of application/x-www-form-urlencoded, as oauth2 sends it).
type withResource struct {
	base     http.RoundTripper // nil: http.DefaultTransport
	resource string
}

// maxTokenForm bounds the form withResource rereads: oauth2's own, a few
// hundred bytes.
const maxTokenForm = 64 << 10

// RoundTrip implements http.RoundTripper.
func (w withResource) RoundTrip(req *http.Request) (*http.Response, error) {
	base := w.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || req.Body == nil || req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		return base.RoundTrip(req)
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxTokenForm+1))
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the token request: %w", err)
	}
	if len(data) > maxTokenForm {
		return nil, errors.New("the token request is larger than 64 KiB")
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return nil, fmt.Errorf("reading the token request: %w", err)
	}
	form.Set("resource", w.resource)
	body := form.Encode()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(strings.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	return base.RoundTrip(out)
}

// refreshLocked trades the refresh token for a new token and caches it.
// Under the file lock it first rereads the cache: another process may have
// refreshed (and, with rotating refresh tokens, spent the one held here).
// The caller holds t.mu.
func (t *Transport) refreshLocked(ctx context.Context) error {
	held := t.entry
	return t.locked(ctx, func() error {
		disk, err := t.read()
		if err != nil {
			return err
		}
		if disk.Token != nil && held.Token != nil && disk.Token.AccessToken != held.Token.AccessToken && disk.Token.Valid() {
			t.entry = disk
			t.gen++
			return nil
		}
		e := held
		if disk.Token != nil && disk.Token.RefreshToken != "" && disk.Client.ID == held.Client.ID {
			e = disk
		}
		resource := e.Resource
		if resource == "" {
			resource = netguard.ShownURL(t.resource)
		}
		tok, err := e.refresh(ctx, t.client, resource)
		if err != nil {
			return t.scrub(fmt.Errorf("refreshing the token for %s: %w", t.server(), tokenError(err)))
		}
		if tok.RefreshToken == "" {
			tok.RefreshToken = e.Token.RefreshToken
		}
		next := *e
		next.Token = tok
		if err := t.save(&next); err != nil {
			return err
		}
		t.entry = &next
		t.gen++
		return nil
	})
}

// withClient makes oauth2 use c for its requests.
func withClient(ctx context.Context, c *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

// tokenError reduces an error of the token endpoint to its status and
// error code: its body and description may echo what was sent.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		code := re.ErrorCode
		if code == "" {
			code = "no error code"
		}
		return fmt.Errorf("%w (HTTP %d, %s)", ErrToken, status, quoteText(code))
	}
	return fmt.Errorf("%w: %s", ErrToken, shortText(err.Error()))
}

// quoteText caps a server's string for a message, raw: the edge printing
// the message escapes it once (textsafe.ShowError).
func quoteText(s string) string {
	return textsafe.Cut(s, 200)
}

// shortText is a foreign error message fit for ours: its first line,
// without anything from where a response body starts ("{", "<", "("), and
// capped. go-sdk and oauth2 append response bodies to some of their errors.
func shortText(s string) string {
	if i := strings.IndexAny(s, "\r\n{<"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " ("); i >= 0 {
		s = s[:i]
	}
	return quoteText(strings.TrimRight(s, " :"))
}

// scrub returns err with every secret at hand (the tokens and client
// secret of the cache) replaced, in case a foreign message echoed one; it
// keeps err's chain.
func (t *Transport) scrub(err error) error {
	if err == nil {
		return nil
	}
	var secrets []string
	add := func(e *entry) {
		if e == nil {
			return
		}
		secrets = append(secrets, e.Client.Secret)
		if e.Token != nil {
			secrets = append(secrets, e.Token.AccessToken, e.Token.RefreshToken)
		}
	}
	add(t.entry)
	return scrubbed(err, append(secrets, t.o.ClientSecret)...)
}

// scrubbed returns err with the given secrets replaced in its message.
func scrubbed(err error, secrets ...string) error {
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		clean = strings.ReplaceAll(clean, s, "[redacted]")
		// What the replacement and its neighbours spell may be s again:
		// cut until nothing is left (each cut shortens the text).
		for strings.Contains(clean, s) {
			clean = strings.ReplaceAll(clean, s, "")
		}
	}
	if clean == msg {
		return err
	}
	return &scrubError{msg: clean, err: err}
}

type scrubError struct {
	msg string
	err error
}

func (e *scrubError) Error() string { return e.msg }
func (e *scrubError) Unwrap() error { return e.err }
