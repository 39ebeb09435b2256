// Package sigstack connects tests to the local Sigstore stack started by
// scripts/sigstore-local/start.sh (or to any deployment described by an
// env.sh of the same shape).
//
// Tests call Require, which skips the test when no stack is running unless
// MCPSIGN_REQUIRE_SIGSTACK=1 (as in CI), in which case the test fails.
package sigstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Environment variables read by this package.
const (
	// EnvFileVar names the env.sh to read; if unset, DefaultEnvPath is used.
	EnvFileVar = "SIGSTACK_ENV"
	// StateVar overrides the default state directory, as for start.sh.
	StateVar = "MCPSIGN_SIGSTORE_STATE"
	// RequireVar, set to 1, turns a missing stack into a test failure.
	RequireVar = "MCPSIGN_REQUIRE_SIGSTACK"
	// DefaultState is the state directory start.sh uses by default.
	DefaultState = "/tmp/mcpsign-sigstore"
)

// Env holds the values exported by a stack's env.sh.
type Env struct {
	State         string // SIGSTACK_STATE: the stack's state directory
	TrustedRoot   string // SIGSTACK_TRUSTED_ROOT: path of trusted_root.json
	SigningConfig string // SIGSTACK_SIGNING_CONFIG: path of signing_config.json
	IDTokenFile   string // SIGSTACK_ID_TOKEN_FILE: path of an ID token for Identity
	Identity      string // SIGSTACK_IDENTITY: e-mail address in IDTokenFile's token
	OIDCIssuer    string // SIGSTACK_OIDC_ISSUER: issuer URL as in certificates
	OIDCTokenURL  string // SIGSTACK_OIDC_TOKEN_URL: GET ?email=... mints a token
	FulcioURL     string // SIGSTACK_FULCIO_URL
	RekorURL      string // SIGSTACK_REKOR_URL (Rekor v2)
	TSAURL        string // SIGSTACK_TSA_URL: full RFC 3161 endpoint URL
	CTURL         string // SIGSTACK_CT_URL
	Bin           string // SIGSTACK_BIN: directory of the stack's binaries (cosign...); may be empty
	// HealthURLs (SIGSTACK_HEALTH_URLS, space separated) must all answer
	// 2xx for the stack to count as running. Empty means no check.
	HealthURLs []string
}

// DefaultEnvPath returns $SIGSTACK_ENV, or env.sh in the default state
// directory ($MCPSIGN_SIGSTORE_STATE or /tmp/mcpsign-sigstore).
func DefaultEnvPath() string {
	if p := os.Getenv(EnvFileVar); p != "" {
		return p
	}
	state := os.Getenv(StateVar)
	if state == "" {
		state = DefaultState
	}
	return filepath.Join(state, "env.sh")
}

// Require returns the running stack's Env. If the stack is not available it
// skips the test, or fails it when MCPSIGN_REQUIRE_SIGSTACK=1.
func Require(t testing.TB) *Env {
	t.Helper()
	path := DefaultEnvPath()
	env, err := Load(path)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = env.Check(ctx)
		cancel()
	}
	if err != nil {
		msg := fmt.Sprintf("local Sigstore stack not available (%s): %v\n"+
			"  start it: scripts/sigstore-local/build.sh && scripts/sigstore-local/start.sh", path, err)
		if os.Getenv(RequireVar) == "1" {
			t.Fatalf("%s\n  (%s=1, so this is a failure)", msg, RequireVar)
		}
		t.Skipf("%s\n  (set %s=1 to fail instead of skipping)", msg, RequireVar)
	}
	return env
}

// Load parses an env.sh written by start.sh: lines of the form
// `export NAME='value'` (or NAME=value), comments and blank lines.
func Load(path string) (*Env, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sigstack: %w", err)
	}
	defer f.Close()
	vars, err := parseEnv(f)
	if err != nil {
		return nil, fmt.Errorf("sigstack: %s: %w", path, err)
	}
	e := &Env{
		State: vars["SIGSTACK_STATE"], TrustedRoot: vars["SIGSTACK_TRUSTED_ROOT"],
		SigningConfig: vars["SIGSTACK_SIGNING_CONFIG"], IDTokenFile: vars["SIGSTACK_ID_TOKEN_FILE"],
		Identity: vars["SIGSTACK_IDENTITY"], OIDCIssuer: vars["SIGSTACK_OIDC_ISSUER"],
		OIDCTokenURL: vars["SIGSTACK_OIDC_TOKEN_URL"], FulcioURL: vars["SIGSTACK_FULCIO_URL"],
		RekorURL: vars["SIGSTACK_REKOR_URL"], TSAURL: vars["SIGSTACK_TSA_URL"], CTURL: vars["SIGSTACK_CT_URL"],
		Bin:        vars["SIGSTACK_BIN"],
		HealthURLs: strings.Fields(vars["SIGSTACK_HEALTH_URLS"]),
	}
	for name, v := range map[string]string{
		"SIGSTACK_TRUSTED_ROOT": e.TrustedRoot, "SIGSTACK_SIGNING_CONFIG": e.SigningConfig,
		"SIGSTACK_OIDC_ISSUER": e.OIDCIssuer, "SIGSTACK_IDENTITY": e.Identity,
	} {
		if v == "" {
			return nil, fmt.Errorf("sigstack: %s: %s is not set", path, name)
		}
	}
	return e, nil
}

func parseEnv(r io.Reader) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, val, ok := strings.Cut(line, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t\"'$") {
			return nil, fmt.Errorf("line %d: not NAME=value", n)
		}
		v, err := unquote(val)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, name, err)
		}
		vars[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	return vars, nil
}

// unquote handles a plain word or shell single quoting, including the
// '\” idiom for a literal quote.
func unquote(s string) (string, error) {
	var b strings.Builder
	for s != "" {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated single quote")
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		case strings.ContainsRune("\"$`\\ \t;&|", rune(s[0])):
			return "", fmt.Errorf("unsupported shell syntax %q", s[0])
		default:
			b.WriteByte(s[0])
			s = s[1:]
		}
	}
	return b.String(), nil
}

// Check reports whether the stack looks usable: its trust files exist and
// every health URL answers 2xx.
func (e *Env) Check(ctx context.Context) error {
	for _, p := range []string{e.TrustedRoot, e.SigningConfig} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("sigstack: %w", err)
		}
	}
	c := &http.Client{Timeout: 2 * time.Second}
	for _, u := range e.HealthURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("sigstack: health URL: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("sigstack: health check: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("sigstack: health check %s: %s", u, resp.Status)
		}
	}
	return nil
}

// IDToken returns the token in IDTokenFile (minted by start.sh for
// Identity). It may have expired on a long-running stack; prefer FreshToken.
func (e *Env) IDToken(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(e.IDTokenFile)
	if err != nil {
		t.Fatalf("sigstack: read ID token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// FreshToken mints a new one-hour ID token for email from the stack's
// issuer. The token is never logged.
func (e *Env) FreshToken(t testing.TB, email string) string {
	t.Helper()
	tok, err := e.fetchToken(email)
	if err != nil {
		t.Fatalf("sigstack: %v", err)
	}
	return tok
}

// FreshToken is Require(t).FreshToken(t, email).
func FreshToken(t testing.TB, email string) string {
	t.Helper()
	return Require(t).FreshToken(t, email)
}

func (e *Env) fetchToken(email string) (string, error) {
	if e.OIDCTokenURL == "" {
		return "", errors.New("SIGSTACK_OIDC_TOKEN_URL is not set: this deployment cannot mint tokens")
	}
	u, err := url.Parse(e.OIDCTokenURL)
	if err != nil {
		return "", fmt.Errorf("token URL: %w", err)
	}
	q := u.Query()
	q.Set("email", email)
	q.Set("aud", "sigstore")
	q.Set("ttl", "1h")
	u.RawQuery = q.Encode()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u.String())
	if err != nil {
		return "", fmt.Errorf("fetch token: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("fetch token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		// The body is an error message here, not a token.
		return "", fmt.Errorf("fetch token: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	tok := strings.TrimSpace(string(b))
	if strings.Count(tok, ".") != 2 {
		return "", errors.New("fetch token: response is not a compact JWT")
	}
	return tok, nil
}
