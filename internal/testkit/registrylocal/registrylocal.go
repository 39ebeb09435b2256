// Package registrylocal finds the official MCP registry that
// scripts/registry-local/start.sh runs on 127.0.0.1, and publishes to it
// with the registry's own mcp-publisher, for tests.
package registrylocal

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
	vars := envVars()
	e := &Env{URL: vars["MCPSIGN_REGISTRY_URL"], Publisher: vars["MCPSIGN_REGISTRY_PUBLISHER"]}
	if e.URL == "" || e.Publisher == "" {
		skip(t, "no local MCP registry (scripts/registry-local/start.sh DIR, then source DIR/env.sh)")
	}
	e.home = t.TempDir()
	e.run(t, e.home, "login", "none", "--registry", e.URL)
	return e
}

func skip(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireVar) == "1" {
		t.Fatalf("%s\n  (%s=1, so this is a failure)", msg, RequireVar)
	}
	t.Skip(msg)
}

// envVars are the MCPSIGN_REGISTRY_* variables: from the environment when
// MCPSIGN_REGISTRY_URL is set there, else from DefaultEnv.
func envVars() map[string]string {
	names := []string{"MCPSIGN_REGISTRY_URL", "MCPSIGN_REGISTRY_PUBLISHER", "MCPSIGN_REGISTRY_BIN", "MCPSIGN_REGISTRY_DATABASE_URL", "MCPSIGN_REGISTRY_PGBIN"}
	vars := map[string]string{}
	if os.Getenv("MCPSIGN_REGISTRY_URL") != "" {
		for _, n := range names {
			vars[n] = os.Getenv(n)
		}
		return vars
	}
	f, err := os.Open(DefaultEnv)
	if err != nil {
		return vars
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if ok && slices.Contains(names, k) {
			vars[k] = strings.Trim(v, "'")
		}
	}
	return vars
}

// Seeded is an official registry server of the test's own, on a database
// of its own in start.sh's PostgreSQL cluster, seeded at start
// (MCP_REGISTRY_SEED_FROM).
type Seeded struct {
	// URL is its base URL.
	URL string
	out *syncWriter
}

// Output is what the server wrote so far (its import's report).
func (s *Seeded) Output() string { return s.out.String() }

// StartSeeded starts the official registry server that start.sh built,
// on a new database of the cluster start.sh runs, with
// MCP_REGISTRY_SEED_FROM=seed (a file, a seed URL, or a registry's
// …/v0/servers URL), and waits until it answers (after its import). It is
// stopped, and its database dropped, when the test ends. Without the
// local registry (or an env.sh of a start.sh without these variables) the
// test skips.
func StartSeeded(t testing.TB, seed string) *Seeded {
	t.Helper()
	vars := envVars()
	bin, dbURL, pgbin := vars["MCPSIGN_REGISTRY_BIN"], vars["MCPSIGN_REGISTRY_DATABASE_URL"], vars["MCPSIGN_REGISTRY_PGBIN"]
	if bin == "" || dbURL == "" || pgbin == "" {
		skip(t, "no local MCP registry with its database (scripts/registry-local/start.sh DIR, then source DIR/env.sh)")
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	db := "seeded_" + hex.EncodeToString(key[:6])
	pg := func(prog string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(pgbin, prog), append([]string{"-h", u.Hostname(), "-p", u.Port(), "-U", u.User.Username()}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
		}
	}
	pg("createdb", db)
	t.Cleanup(func() { pg("dropdb", "--if-exists", db) })
	u.Path = "/" + db
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	mu := &syncWriter{w: &bytes.Buffer{}}
	s := &Seeded{URL: "http://" + addr, out: mu}
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "MCP_REGISTRY_SERVER_ADDRESS="+addr, "MCP_REGISTRY_DATABASE_URL="+u.String(),
		"MCP_REGISTRY_ENABLE_ANONYMOUS_AUTH=true", "MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_JWT_PRIVATE_KEY="+hex.EncodeToString(key), "MCP_REGISTRY_SEED_FROM="+seed)
	cmd.Stdout, cmd.Stderr = mu, mu
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("the registry ended: %s", mu.String())
		default:
		}
		if resp, err := http.Get(s.URL + "/v0.1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not answer: %s", mu.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// syncWriter is a writer of a process's two streams, readable meanwhile.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
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
