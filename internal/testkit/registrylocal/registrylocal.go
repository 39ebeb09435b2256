// Package registrylocal finds the official MCP registry that
// scripts/registry-local/start.sh runs on 127.0.0.1, and publishes to it
// with the registry's own mcp-publisher, for tests.
package registrylocal

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireVar, set to 1, turns a missing registry into a test failure.
const RequireVar = "MCPSIGN_REQUIRE_REGISTRY"

// DefaultEnv is where start.sh's env.sh is looked for when
// MCPSIGN_REGISTRY_URL is not set (scripts/test.sh's state directory).
const DefaultEnv = "/tmp/mcpsign-registry-test/env.sh"

// Env is a running registry.
type Env struct {
	// URL is its base URL, Publisher the mcp-publisher binary.
	URL, Publisher string
	home           string
}

// Require returns the running registry, or skips the test (fails it with
// MCPSIGN_REQUIRE_REGISTRY=1). It logs mcp-publisher in anonymously.
func Require(t testing.TB) *Env {
	t.Helper()
	e := &Env{URL: os.Getenv("MCPSIGN_REGISTRY_URL"), Publisher: os.Getenv("MCPSIGN_REGISTRY_PUBLISHER")}
	if e.URL == "" {
		if f, err := os.Open(DefaultEnv); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
				v = strings.Trim(v, "'")
				switch {
				case !ok:
				case k == "MCPSIGN_REGISTRY_URL":
					e.URL = v
				case k == "MCPSIGN_REGISTRY_PUBLISHER":
					e.Publisher = v
				}
			}
			f.Close()
		}
	}
	if e.URL == "" || e.Publisher == "" {
		msg := "no local MCP registry (scripts/registry-local/start.sh DIR, then source DIR/env.sh)"
		if os.Getenv(RequireVar) == "1" {
			t.Fatalf("%s\n  (%s=1, so this is a failure)", msg, RequireVar)
		}
		t.Skip(msg)
	}
	e.home = t.TempDir()
	e.run(t, e.home, "login", "none", "--registry", e.URL)
	return e
}

func (e *Env) run(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(e.Publisher, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+e.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcp-publisher %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Publish publishes one server.json with `mcp-publisher publish`.
func (e *Env) Publish(t testing.TB, serverJSON []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server.json"), serverJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(t, dir, "publish")
}
