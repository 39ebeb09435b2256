package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
	"github.com/mcpsign/mcpsign/oauth"
)

// runOAuthCLI runs mcpsign in-process with open playing the browser.
func runOAuthCLI(t *testing.T, open func(context.Context, string) error, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(string) string { return "" },
		isTerminal: func() bool { return false },
		openURL:    open,
	}
	code = run(context.Background(), args, a)
	return code, out.String(), errb.String()
}

// TestDigestOAuth lists a server behind OAuth with --oauth: the sign-in
// through the (test) browser, then the cache; no token in any output.
func TestDigestOAuth(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	dir := t.TempDir()
	code, stdout, stderr := runOAuthCLI(t, oauthtest.Browser, "digest", "--oauth", "--oauth-cache-dir", dir, "--format", "json", rs.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var report struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || report.Counts["tools"] != 1 {
		t.Fatalf("stdout %q (%v)", stdout, err)
	}
	if !strings.Contains(stderr, "open this URL in a browser") {
		t.Errorf("stderr does not show the sign-in URL:\n%s", stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var cache struct {
		Token struct {
			Access  string `json:"access_token"`
			Refresh string `json:"refresh_token"`
		} `json:"token"`
	}
	if err := json.Unmarshal(data, &cache); err != nil || cache.Token.Access == "" {
		t.Fatalf("cache %s: %v", data, err)
	}

	noBrowser := func(context.Context, string) error {
		t.Error("browser opened with a cached token")
		return nil
	}
	code, stdout2, stderr2 := runOAuthCLI(t, noBrowser, "digest", "--oauth", "--oauth-cache-dir", dir, "--format", "json", rs.URL)
	if code != 0 || stdout2 != stdout {
		t.Fatalf("second run: exit %d, same output %v\n%s", code, stdout2 == stdout, stderr2)
	}
	// diff signs in to each live side: both from the cache here.
	if code, _, stderr := runOAuthCLI(t, noBrowser, "diff", "--oauth", "--oauth-cache-dir", dir, rs.URL, rs.URL); code != 0 {
		t.Fatalf("diff: exit %d\n%s", code, stderr)
	}
	if as.CodeExchanges.Load() != 1 {
		t.Errorf("code exchanges %d, want 1", as.CodeExchanges.Load())
	}
	for _, s := range []string{cache.Token.Access, cache.Token.Refresh} {
		if strings.Contains(stdout+stderr+stdout2+stderr2, s) {
			t.Errorf("a token appears in the output")
		}
	}
}

// TestDigestOAuthErrors: a 401 without OAuth metadata, and --oauth misused,
// are one line each, exit 2, with the flag that helps.
func TestDigestOAuthErrors(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	bare := oauthtest.NewRS(t, as, oauthtest.RSOptions{NoMetadata: true})
	protected := oauthtest.NewRS(t, as, oauthtest.RSOptions{})
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no metadata", []string{"digest", "--oauth", "--oauth-cache-dir", dir, bare.URL}, []string{"no usable OAuth metadata", bare.URL, "--header"}},
		{"with a header", []string{"digest", "--oauth", "--oauth-cache-dir", dir, "--header", "authorization: Bearer x", bare.URL}, []string{"--oauth and --header Authorization"}},
		{"no oauth", []string{"digest", protected.URL}, []string{"--oauth"}},
		{"stdio", []string{"digest", "--oauth", "--", "true"}, []string{"--oauth is for a Streamable HTTP URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runOAuthCLI(t, nil, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("%d lines:\n%s", n+1, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}

// TestOAuthFlagHints: the OAuth errors name the flags that fix them.
func TestOAuthFlagHints(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		fmt.Errorf("x: %w", oauth.ErrNoMetadata):          "--header 'Authorization: Bearer",
		fmt.Errorf("x: %w", oauth.ErrNoRegistration):      "--oauth-client-id",
		fmt.Errorf("x: %w", oauth.ErrDenied):              "--no-browser",
		&mcpwire.StatusError{Method: "POST", Status: 401}: "--oauth signs in",
	} {
		if got := withFlagHint(err).Error(); !strings.Contains(got, want) {
			t.Errorf("%v: got %q, want %q", err, got, want)
		}
	}
}

// TestDigestOAuthClientSecret: a confidential client registered beforehand,
// its secret from the environment; the secret is in no output. (Not
// parallel: it sets an environment variable.)
func TestDigestOAuthClientSecret(t *testing.T) {
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	const secret = "confidential-client-s3cret"
	as.Register("mcpsign-ci", secret, "http://127.0.0.1:"+port+"/callback")
	t.Setenv("MCPSIGN_TEST_OAUTH_SECRET", secret)
	args := []string{"digest", "--oauth", "--oauth-cache-dir", t.TempDir(), "--oauth-client-id", "mcpsign-ci",
		"--oauth-client-secret-env", "MCPSIGN_TEST_OAUTH_SECRET", "--oauth-redirect-port", port, rs.URL}
	code, stdout, stderr := runOAuthCLI(t, oauthtest.Browser, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Error("the client secret appears in the output")
	}
	if as.Registrations.Load() != 0 {
		t.Errorf("%d dynamic registrations, want 0", as.Registrations.Load())
	}
	code, _, stderr = runOAuthCLI(t, oauthtest.Browser, "digest", "--oauth", "--oauth-client-id", "x", "--oauth-client-secret-env", "MCPSIGN_TEST_OAUTH_UNSET", rs.URL)
	if code != 2 || !strings.Contains(stderr, "MCPSIGN_TEST_OAUTH_UNSET is not set") {
		t.Errorf("unset variable: exit %d, %s", code, stderr)
	}
}

// userAtStderr plays a user who reads the sign-in URL on stderr and opens
// it in a browser elsewhere (--no-browser).
type userAtStderr struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var authorizeURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?\S+`)

func (u *userAtStderr) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	before := u.buf.Len()
	u.buf.Write(p)
	if url := authorizeURL.FindString(u.buf.String()[before:]); url != "" {
		go oauthtest.Browser(context.Background(), url)
	}
	return len(p), nil
}

// TestDigestOAuthNoBrowser: with --no-browser nothing is opened, and the
// URL printed on stderr is enough to sign in.
func TestDigestOAuthNoBrowser(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	stderr := &userAtStderr{}
	a := &app{
		stdin:  strings.NewReader(""),
		stdout: io.Discard,
		stderr: stderr,
		getenv: func(string) string { return "" },
		openURL: func(context.Context, string) error {
			t.Error("a browser was opened with --no-browser")
			return nil
		},
		isTerminal: func() bool { return false },
	}
	if code := run(context.Background(), []string{"digest", "--oauth", "--no-browser", "--oauth-cache-dir", t.TempDir(), rs.URL}, a); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.buf.String())
	}
	if as.CodeExchanges.Load() != 1 {
		t.Errorf("code exchanges %d, want 1", as.CodeExchanges.Load())
	}
}
