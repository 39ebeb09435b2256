package proxycmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	v := strconv.Quote(BuildVersion())
	tests := []struct {
		name    string
		value   *string
		wantErr string
	}{
		{"missing: started by hand", nil, "started by 'mcpsign proxy'"},
		{"not JSON", ptr("{"), EnvConfig},
		{"an unknown member", ptr(`{"version":` + v + `,"lock":"l","command":["s"],"verifyComand":["x"]}`), "unknown field"},
		{"another version", ptr(`{"version":"v0.0.1","lock":"l","command":["s"]}`), `started by mcpsign "v0.0.1": install both from one release`},
		{"another version, with a member we do not know", ptr(`{"version":"v9.0.0","lock":"l","command":["s"],"sandbox":true}`), `started by mcpsign "v9.0.0"`},
		{"no version", ptr(`{"lock":"l","command":["s"]}`), `started by mcpsign ""`},
		{"too large", ptr(`{"lock":"` + strings.Repeat("a", maxConfigBytes) + `"}`), "larger than"},
		{"good", ptr(`{"version":` + v + `,"lock":"l","tofu":true,"command":["s","--flag"],"verifyCommand":["mcpsign","proxy-verify","--key=k.pub"]}`), ""},
		{"oauth", ptr(`{"version":` + v + `,"lock":"l","tofu":true,"command":["s","--flag"],"verifyCommand":["mcpsign","proxy-verify","--key=k.pub"],"oauth":{"clientId":"c","clientSecretEnv":"S","noBrowser":true}}`), ""},
		{"oauth with a secret", ptr(`{"version":` + v + `,"lock":"l","command":["s"],"oauth":{"clientSecret":"x"}}`), "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.value == nil {
				os.Unsetenv(EnvConfig)
			} else {
				t.Setenv(EnvConfig, *tc.value)
			}
			cfg, err := ConfigFromEnv()
			if _, still := os.LookupEnv(EnvConfig); still {
				t.Errorf("%s is still in the environment: the server would inherit it", EnvConfig)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Lock != "l" || !cfg.TOFU || len(cfg.Command) != 2 || len(cfg.VerifyCommand) != 3 {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestRunRefuses checks the errors Run reports before any server starts:
// exit 2 and a message naming the problem and the file.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	edited := filepath.Join(dir, "edited.lock")
	if err := os.WriteFile(edited, []byte(`{"kind":"mcpsign.lock","lockVersion":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	server := []string{"sh", "-c", "touch " + started}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no command", Config{Lock: "x.lock"}, ErrNoCommand.Error()},
		{"no lock flag", Config{Command: server}, ErrNoLockFile.Error()},
		{"no lock file", Config{Lock: filepath.Join(dir, "missing.lock"), Command: server}, "nothing approves a first use"},
		{"a bad lock", Config{Lock: edited, Command: server}, edited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), &tc.cfg, nil, nil, strings.NewReader(""), &stdout, &stderr)
			if code != ExitError || !strings.HasPrefix(stderr.String(), "mcpsign: ") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr.String(), ExitError, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q", stdout.String())
			}
			if _, err := os.Stat(started); err == nil {
				t.Fatal("the server was started")
			}
		})
	}
}

// TestRunOAuth: what the bridge refuses under OAuth before and during a
// session, in one line each: OAuth for a command, a client secret whose
// variable is unset, and a redirect to another origin, which the OAuth
// transport does not exempt from the bridge's redirect rule.
func TestRunOAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer other.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	oc := &OAuthConfig{NoBrowser: true, CacheDir: filepath.Join(dir, "oauth")}
	lock := filepath.Join(dir, "r.lock")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a command", Config{Lock: lock, TOFU: true, Command: []string{"true"}, OAuth: oc}, "OAuth is for a remote server"},
		{"secret unset", Config{Lock: lock, TOFU: true, URL: front.URL + "/mcp", OAuth: &OAuthConfig{ClientID: "c", SecretEnv: "MCPSIGN_TEST_UNSET_SECRET", CacheDir: oc.CacheDir}}, "MCPSIGN_TEST_UNSET_SECRET"},
		{"a redirect elsewhere", Config{Lock: lock, TOFU: true, URL: front.URL + "/mcp", OAuth: oc}, "redirects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n")
			code := Run(context.Background(), &tc.cfg, nil, nil, stdin, &stdout, &stderr)
			if code != ExitError || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr.String(), ExitError, tc.want)
			}
			if strings.Count(stderr.String(), "mcpsign: ") != 1 {
				t.Errorf("stderr %q: want one line", stderr.String())
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed to another origin (%d requests)", n)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("a lock was written")
	}
}
