package proxycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
	"github.com/mcpsign/mcpsign/oauth"
)

// TestRunOAuthSignInDuringSession: with a browser (no NoBrowser), a token
// that is revoked during the session and cannot be refreshed leads to a new
// sign-in in the browser, the request goes through, and the session goes on;
// everything of it on stderr, nothing on the client's stdout but JSON-RPC
// (go-sdk's client reads it).
func TestRunOAuthSignInDuringSession(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	dir := t.TempDir()
	cache := filepath.Join(dir, "oauth")
	var opens atomic.Int64
	open := func(ctx context.Context, u string) error {
		opens.Add(1)
		return oauthtest.Browser(ctx, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// What mcpsign does before the hand-over.
	first, err := oauth.New(oauth.Options{ServerURL: rs.URL, CacheDir: cache, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Authorize(ctx); err != nil {
		t.Fatal(err)
	}

	cfg := &Config{Lock: filepath.Join(dir, "r.lock"), TOFU: true, URL: rs.URL, OAuth: &OAuthConfig{CacheDir: cache, Open: open}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &fixtures.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		code := Run(ctx, cfg, nil, nil, inR, outW, stderr)
		outW.Close()
		done <- code
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"}); err != nil {
		t.Fatalf("call: %v", err)
	}
	data, err := os.ReadFile(first.CachePath())
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Client struct {
			ID string `json:"clientId"`
		} `json:"client"`
		Token struct {
			Refresh string `json:"refresh_token"`
		} `json:"token"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	as.Revoke(t, e.Token.Refresh, e.Client.ID)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"}); err != nil {
		t.Fatalf("call after the revocation: %v\n%s", err, stderr.String())
	}
	cs.Close()
	if code := <-done; code != ExitOK {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
	if opens.Load() != 2 || as.CodeExchanges.Load() != 2 {
		t.Errorf("browser opened %d times, %d code exchanges: want 2 each", opens.Load(), as.CodeExchanges.Load())
	}
	if !strings.Contains(stderr.String(), "asks you to sign in") {
		t.Errorf("stderr does not show the sign-in:\n%s", stderr.String())
	}
	if bytes.Contains([]byte(stderr.String()), []byte(e.Token.Refresh)) {
		t.Error("the refresh token shows on stderr")
	}
}

// TestOAuthConfigSignIn: a sign-in in the browser leaves the token in the
// cache, where a transport without a browser finds it; a secret variable
// that is not set fails before anything is asked.
func TestOAuthConfigSignIn(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	cache := filepath.Join(t.TempDir(), "oauth")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	c := &OAuthConfig{CacheDir: cache, Open: oauthtest.Browser}
	tr, err := c.SignIn(ctx, rs.URL, &stderr)
	if err != nil {
		t.Fatalf("SignIn: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(tr.CachePath()); err != nil {
		t.Errorf("no token cached: %v", err)
	}
	again := &OAuthConfig{CacheDir: cache, NoBrowser: true}
	if _, err := again.SignIn(ctx, rs.URL, io.Discard); err != nil {
		t.Errorf("a second sign-in with the cached token: %v", err)
	}
	var se *SecretEnvError
	unset := &OAuthConfig{CacheDir: t.TempDir(), ClientID: "c", SecretEnv: "MCPSIGN_TEST_UNSET_SECRET"}
	if _, err := unset.SignIn(ctx, rs.URL, io.Discard); !errors.As(err, &se) || se.Name != "MCPSIGN_TEST_UNSET_SECRET" {
		t.Errorf("an unset secret variable: %v", err)
	}
}
