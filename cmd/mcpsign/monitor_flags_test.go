package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMonitorLocalChecksFirst: what the flags name on this machine (the
// state file, the --released directories) is checked before the trusted
// root is loaded or the log read: a missing state is said as such, with
// what to do, not hidden behind a trusted root (or TUF) error.
func TestMonitorLocalChecksFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "release.pub")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	badRoot := filepath.Join(dir, "no-such-trusted-root.json")
	missing := filepath.Join(dir, "none.state.json")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no state file", []string{"--state", missing}, []string{"no state file", "--init"}},
		{"no released directory", []string{"--init", "--state", missing, "--released", filepath.Join(dir, "dist")}, []string{"--released", "dist", "not a directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"monitor", "--key", pub, "--trusted-root", badRoot, "--log", "http://127.0.0.1:1"}, c.args...)...)
			if code != 2 || strings.Contains(stderr, "no-such-trusted-root") {
				t.Fatalf("exit %d, want 2 before the trusted root is read:\n%s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestMonitorNotALog: --log naming a URL that serves neither a tlog-tiles
// checkpoint nor the Rekor v1 API (a Rekor v2 log's write API, say) is an
// error that says so and what --log must be, not the v1 client's reading
// of a 404 page.
func TestMonitorNotALog(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(key.Public())
	pub := filepath.Join(dir, "release.pub")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "testdata", "real-bundles", "trusted-roots", "production_trusted_root.sigstore-python.json")
	// A --released directory with a file that is no bundle: named, with why.
	dist := filepath.Join(dir, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "notes-1.0.0.tgz"), []byte("not a bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "monitor", "--init", "--state", filepath.Join(dir, "s.json"), "--key", pub, "--trusted-root", root, "--log", srv.URL+"/api/v2", "--released", dist)
	for _, w := range []string{"serves neither checkpoint", "api/v1/log", "--log", "write API", "Monitoring a local stack",
		"notice: --released: " + filepath.Join(dist, "notes-1.0.0.tgz") + " skipped: not a Sigstore bundle"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if code != 2 || strings.Contains(stderr, "TextConsumer") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.json")); err == nil {
		t.Error("a state was written")
	}
}
