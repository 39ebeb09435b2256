package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/oauthtest"
	"github.com/mcpsign/mcpsign/pin"
)

// signInURL is how the oauth package prints the URL to open on stderr.
var signInURL = regexp.MustCompile(`open this URL in a browser:\n  (\S+)\n`)

// signInWatcher is a process's stderr that plays the user: each sign-in
// URL printed on it is opened in the test browser (which records the
// authorization codes it carries back), or, with refuse, fails the test.
type signInWatcher struct {
	t      *testing.T
	buf    fixtures.SyncBuffer
	refuse bool

	mu     sync.Mutex
	opened int
	codes  *[]string
}

func (w *signInWatcher) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	ms := signInURL.FindAllStringSubmatch(w.buf.String(), -1)
	for ; w.opened < len(ms); w.opened++ {
		if w.refuse {
			w.t.Errorf("a sign-in was asked for")
			continue
		}
		go w.browse(ms[w.opened][1])
	}
	return n, err
}

// browse follows the authorization URL as a browser whose user signs in,
// recording the code the redirect carries.
func (w *signInWatcher) browse(authURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if code := req.URL.Query().Get("code"); code != "" {
			w.mu.Lock()
			*w.codes = append(*w.codes, code)
			w.mu.Unlock()
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = c.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if err != nil {
		w.t.Errorf("browser: %v", err)
	}
}

// oauthCache is what the tests read of the one token file in dir.
type oauthCache struct {
	path   string
	Client struct {
		ID string `json:"clientId"`
	} `json:"client"`
	Token struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	} `json:"token"`
}

func readOAuthCache(t *testing.T, dir string) *oauthCache {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	c := &oauthCache{path: files[0]}
	if err := json.Unmarshal(data, c); err != nil || c.Token.Access == "" || c.Token.Refresh == "" {
		t.Fatalf("token file: %v", err)
	}
	if fi, err := os.Stat(files[0]); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}
	return c
}

// TestProxyOAuth runs the bridge in front of a server behind OAuth
// (zitadel's OpenID provider, go-sdk's RequireBearerToken) as a host does,
// mcpsign handing over to mcpsign-proxy, with a go-sdk client on its
// stdio: the sign-in before the hand-over (URL on stderr, --no-browser),
// a listing and a call under a lock written on first use; a second session
// from the cache, its access token revoked mid-session and refreshed; an
// expired cached token refreshed by mcpsign-proxy itself; a revoked refresh
// token ending the session with one line. No token or code shows in
// stderr, the lock, the audit log or the handed-over configuration.
func TestProxyOAuth(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha", "beta"}})
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "oauth")
	lock := filepath.Join(dir, "remote.lock")
	auditLog := filepath.Join(dir, "audit.jsonl")
	argv := []string{mcpsign, "proxy", "--lock", lock, "--tofu", "--audit-log", auditLog,
		"--oauth", "--no-browser", "--oauth-cache-dir", cacheDir, "--", rs.URL}

	var (
		codes    []string
		outputs  []string // every stderr
		configs  []string // every handed-over configuration seen
		secrets  []string // every token seen in the cache
		exchange = func() int64 { return as.CodeExchanges.Load() }
	)
	start := func(t *testing.T, signIn bool, argv []string, env ...string) (*proxyProcess, *signInWatcher, error) {
		t.Helper()
		w := &signInWatcher{t: t, refuse: !signIn, codes: &codes}
		p := &proxyProcess{cmd: exec.Command(argv[0], argv[1:]...), stderr: &w.buf}
		p.cmd.Stderr = w
		p.cmd.Env = append(os.Environ(), env...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "oauth-bridge-test", Version: "0"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Second}, nil)
		p.cs = cs
		t.Cleanup(func() {
			if p.cmd.Process != nil && p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
			}
			outputs = append(outputs, w.buf.String())
			if t.Failed() {
				t.Logf("stderr:\n%s", w.buf.String())
			}
		})
		if err == nil {
			if env, rerr := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid)); rerr == nil {
				for _, kv := range strings.Split(string(env), "\x00") {
					if v, ok := strings.CutPrefix(kv, proxycmd.EnvConfig+"="); ok {
						configs = append(configs, v)
					}
				}
			}
		}
		return p, w, err
	}
	call := func(cs *mcp.ClientSession, name string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		return err
	}

	t.Run("first sign-in", func(t *testing.T) {
		p, w, err := start(t, true, argv)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, []string{"alpha", "beta"}) {
			t.Errorf("tools %q", got)
		}
		if err := call(p.cs, "alpha"); err != nil {
			t.Errorf("call: %v", err)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(w.buf.String(), "signed in to") || exchange() != 1 || len(codes) != 1 {
			t.Errorf("code exchanges %d, codes %d; stderr:\n%s", exchange(), len(codes), w.buf.String())
		}
		if l, err := pin.Read(lock); err != nil || l.Approval.Method != pin.MethodTOFU {
			t.Fatalf("lock: %v", err)
		}
		c := readOAuthCache(t, cacheDir)
		secrets = append(secrets, c.Token.Access, c.Token.Refresh)
		if len(configs) == 1 && !strings.Contains(configs[0], `"oauth":{`) {
			t.Errorf("the handed-over configuration has no oauth: %s", configs[0])
		}
	})

	t.Run("cache reused, revoked access token refreshed", func(t *testing.T) {
		p, _, err := start(t, false, argv)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := call(p.cs, "alpha"); err != nil {
			t.Fatalf("call: %v", err)
		}
		before := readOAuthCache(t, cacheDir)
		refreshes := as.Refreshes.Load()
		as.Revoke(t, before.Token.Access, before.Client.ID)
		if err := call(p.cs, "beta"); err != nil {
			t.Fatalf("call after the revocation: %v", err)
		}
		if as.Refreshes.Load() != refreshes+1 {
			t.Errorf("refreshes %d, want %d", as.Refreshes.Load(), refreshes+1)
		}
		after := readOAuthCache(t, cacheDir)
		if after.Token.Access == before.Token.Access {
			t.Error("the cache still holds the revoked token")
		}
		secrets = append(secrets, after.Token.Access, after.Token.Refresh)
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})

	t.Run("expired token refreshed by mcpsign-proxy", func(t *testing.T) {
		// mcpsign-proxy started with the configuration mcpsign hands over,
		// so that no sign-in in mcpsign refreshes the token first.
		c := readOAuthCache(t, cacheDir)
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		raw["token"].(map[string]any)["expiry"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
		data, _ = json.Marshal(raw)
		if err := os.WriteFile(c.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _ := json.Marshal(&proxycmd.Config{Version: proxycmd.BuildVersion(), Lock: lock, URL: rs.URL,
			OAuth: &proxycmd.OAuthConfig{NoBrowser: true, CacheDir: cacheDir}})
		refreshes := as.Refreshes.Load()
		p, _, err := start(t, false, []string{filepath.Join(filepath.Dir(mcpsign), proxycmd.ExecutableName)}, proxycmd.EnvConfig+"="+string(cfg))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := call(p.cs, "alpha"); err != nil {
			t.Fatalf("call: %v", err)
		}
		if as.Refreshes.Load() != refreshes+1 {
			t.Errorf("refreshes %d, want %d", as.Refreshes.Load(), refreshes+1)
		}
		after := readOAuthCache(t, cacheDir)
		secrets = append(secrets, after.Token.Access, after.Token.Refresh)
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})

	t.Run("revoked refresh token ends the session", func(t *testing.T) {
		p, w, err := start(t, false, argv)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		c := readOAuthCache(t, cacheDir)
		as.Revoke(t, c.Token.Refresh, c.Client.ID)
		if err := call(p.cs, "alpha"); err == nil {
			t.Fatal("the call went through with revoked tokens")
		}
		if code := p.end(t); code != proxycmd.ExitError {
			t.Errorf("exit %d, want %d", code, proxycmd.ExitError)
		}
		var last string
		for _, line := range strings.Split(strings.TrimSpace(w.buf.String()), "\n") {
			if strings.HasPrefix(line, "mcpsign: ") {
				last = line
			}
		}
		for _, want := range []string{"a new OAuth sign-in is needed", rs.URL, "restart the server in the host"} {
			if !strings.Contains(last, want) {
				t.Errorf("the last line %q does not say %q", last, want)
			}
		}
	})

	if exchange() != 1 {
		t.Errorf("code exchanges %d, want 1: a session signed in again", exchange())
	}
	if len(configs) == 0 {
		t.Log("no /proc: the handed-over configuration not read")
	}
	lockData, _ := os.ReadFile(lock)
	auditData, _ := os.ReadFile(auditLog)
	if len(auditData) == 0 {
		t.Error("nothing in the audit log")
	}
	everything := strings.Join(append(append(outputs, configs...), string(lockData), string(auditData)), "\n")
	for _, s := range append(secrets, codes...) {
		if s != "" && strings.Contains(everything, s) {
			t.Errorf("a token or code shows in stderr, the lock, the audit log or the configuration")
		}
	}
}

// TestProxyOAuthFlags: --oauth on the proxy, misused, is one line naming
// the flags, exit 2, before any sign-in; and without mcpsign-proxy (in
// process) the sign-in uses the app's opener and writes nothing to stdout.
func TestProxyOAuthFlags(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t)
	rs := oauthtest.NewRS(t, as, oauthtest.RSOptions{Tools: []string{"alpha"}})
	dir := t.TempDir()
	lock := filepath.Join(dir, "r.lock")
	cache := filepath.Join(dir, "oauth")
	opened := 0
	open := func(ctx context.Context, u string) error {
		opened++
		return oauthtest.Browser(ctx, u)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a command", []string{"--", "true"}, "--oauth is for a remote server"},
		{"with a header", []string{"--header", "Authorization: Bearer x", "--", rs.URL}, "--oauth and --header Authorization"},
		{"secret unset", []string{"--oauth-client-id", "c", "--oauth-client-secret-env", "MCPSIGN_TEST_UNSET_SECRET", "--", rs.URL}, "--oauth-client-secret-env: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"proxy", "--lock", lock, "--tofu", "--oauth", "--oauth-cache-dir", cache}, tc.args...)
			code, stdout, stderr := runOAuthCLI(t, open, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q: want 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
	if opened != 0 {
		t.Fatal("a refused command line signed in")
	}
	code, stdout, stderr := runOAuthCLI(t, open, "proxy", "--lock", lock, "--tofu", "--oauth", "--oauth-cache-dir", cache, "--", rs.URL)
	if code != 0 || stdout != "" || opened != 1 || !strings.Contains(stderr, "signed in to") {
		t.Errorf("in process: exit %d, opened %d, stdout %q, stderr %q", code, opened, stdout, stderr)
	}
}
