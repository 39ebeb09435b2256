package sigstack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
)

// fakeTB records Skip/Fatal instead of ending the calling test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs fn in its own goroutine so that Goexit ends only fn.
func call(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
}

func writeEnv(t *testing.T, dir string, extra map[string]string) string {
	t.Helper()
	vals := map[string]string{
		"SIGSTACK_STATE":          dir,
		"SIGSTACK_TRUSTED_ROOT":   filepath.Join(dir, "trusted_root.json"),
		"SIGSTACK_SIGNING_CONFIG": filepath.Join(dir, "signing_config.json"),
		"SIGSTACK_ID_TOKEN_FILE":  filepath.Join(dir, "id_token"),
		"SIGSTACK_IDENTITY":       "signer@example.com",
		"SIGSTACK_OIDC_ISSUER":    "http://127.0.0.1:5556",
		"SIGSTACK_HEALTH_URLS":    "",
	}
	for k, v := range extra {
		vals[k] = v
	}
	var b strings.Builder
	b.WriteString("# comment\n\n")
	for k, v := range vals {
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	for _, f := range []string{"trusted_root.json", "signing_config.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "env.sh")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadQuoting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := writeEnv(t, dir, map[string]string{"SIGSTACK_HEALTH_URLS": "http://a/healthz  http://b/ping"})
	e, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if e.State != dir || e.Identity != "signer@example.com" || len(e.HealthURLs) != 2 || e.HealthURLs[1] != "http://b/ping" {
		t.Fatalf("env = %+v", e)
	}
	for in, want := range map[string]string{"plain": "plain", "'a b'": "a b", `'a'\''b'`: "a'b", "''": ""} {
		if got, err := unquote(in); err != nil || got != want {
			t.Errorf("unquote(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"'open", `"dq"`, "$HOME", "a b", "a;b"} {
		if _, err := unquote(in); err == nil {
			t.Errorf("unquote(%s) accepted", in)
		}
	}
}

func TestRequireSkipsOrFails(t *testing.T) {
	t.Setenv(EnvFileVar, filepath.Join(t.TempDir(), "missing", "env.sh"))

	t.Setenv(RequireVar, "")
	f := &fakeTB{TB: t}
	call(func() { Require(f) })
	if f.skipped == "" || f.failed != "" || !strings.Contains(f.skipped, "start.sh") {
		t.Errorf("without %s: skipped=%q failed=%q", RequireVar, f.skipped, f.failed)
	}

	t.Setenv(RequireVar, "1")
	f = &fakeTB{TB: t}
	call(func() { Require(f) })
	if f.failed == "" || f.skipped != "" {
		t.Errorf("with %s=1: skipped=%q failed=%q", RequireVar, f.skipped, f.failed)
	}
}

func TestRequireHealthAndFreshToken(t *testing.T) {
	key, err := oidcissuer.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is, err := oidcissuer.Listen("127.0.0.1:0", key)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	dir := t.TempDir()
	t.Setenv(EnvFileVar, writeEnv(t, dir, map[string]string{
		"SIGSTACK_OIDC_ISSUER":    is.URL(),
		"SIGSTACK_OIDC_TOKEN_URL": is.URL() + "/token",
		"SIGSTACK_HEALTH_URLS":    is.URL() + "/healthz",
	}))
	t.Setenv(RequireVar, "1")
	env := Require(t)
	tok := env.FreshToken(t, "tester@example.com")
	if strings.Count(tok, ".") != 2 {
		t.Fatal("FreshToken did not return a compact JWT")
	}
	if _, err := env.fetchToken(""); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("empty email: %v", err)
	}

	env.HealthURLs = append(env.HealthURLs, down.URL)
	if err := env.Check(context.Background()); err == nil {
		t.Error("Check passed with a failing health URL")
	}
}
