package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/interrupt"
	"github.com/mcpsign/mcpsign/internal/testkit/registrylocal"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/registry"
)

// TestRegistryVerifyCLI runs `mcpsign registry verify` over a file of
// entries whose bundle is served over TLS on 127.0.0.1, signed through the
// local Sigstore stack as acme/notes's release workflow.
func TestRegistryVerifyCLI(t *testing.T) {
	env := sigstack.Require(t)
	svc, tr, err := registrylocal.StackServices(env.TrustedRoot, env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	issuer := env.OIDCIssuer + "/github"
	b, err := registrylocal.SignAsWorkflow(context.Background(), registrylocal.Workflow{Issuer: issuer, Repository: "acme/notes", Version: "1.0.0"},
		svc, tr, []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(b) }))
	defer srv.Close()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	os.WriteFile(pol, []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":%q},"servers":{"io.github.acme/*":{"repositorySigner":{"issuer":%q}}}}`, env.TrustedRoot, issuer)), 0o644)
	entry := func(name, meta string) string {
		return `{"name":"io.github.acme/` + name + `","version":"1.0.0","repository":{"url":"https://github.com/acme/notes","source":"github"},` +
			`"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"stdio"}}]` + meta + `}`
	}
	good := entry("notes", `,"_meta":{"`+registry.PublisherProvided+`":{"`+registry.AttestationMember+`":{"bundleUrl":"`+srv.URL+`/b","bundleDigest":"`+registry.PointerDigest(b)+`"}}}`)
	goodFile, mixedFile := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "mixed.jsonl")
	os.WriteFile(goodFile, []byte(good+"\n"), 0o644)
	os.WriteFile(mixedFile, []byte(good+"\n"+entry("unsigned", "")+"\n"), 0o644)
	out := filepath.Join(dir, "verified.json")

	code, stdout, stderr := runHTTPS(t, srv.Client(), "registry", "verify", goodFile, "--policy", pol, "--format", "json", "--verified-out", out, "--allow-private-bundles")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var r registry.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || !r.Verified || r.Name != "io.github.acme/notes" || r.Policy != "io.github.acme/*" || len(r.Signers) != 1 {
		t.Fatalf("%v: %s", err, stdout)
	}
	dump, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(dump), `"`+registry.VerifiedMember+`":`) {
		t.Fatalf("verified dump: %v %s", err, dump)
	}
	// The dump is itself a source, and verifies.
	if code, stdout, stderr := runHTTPS(t, srv.Client(), "registry", "verify", out, "--policy", pol, "--allow-private-bundles"); code != 0 || !strings.HasPrefix(stdout, "VERIFIED ") {
		t.Fatalf("dump: exit %d: %s%s", code, stdout, stderr)
	}

	code, stdout, stderr = runHTTPS(t, srv.Client(), "registry", "verify", mixedFile, "--policy", pol, "--format", "json", "--allow-private-bundles")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 1 || len(lines) != 2 || !strings.Contains(lines[1], `"step":"attestation"`) {
		t.Fatalf("mixed: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, _ = runHTTPS(t, srv.Client(), "registry", "verify", mixedFile, "--policy", pol, "--allow-private-bundles")
	if code != 1 || !strings.Contains(stdout, `FAILED   "io.github.acme/unsigned" "1.0.0" (line 2, entry 0) at step attestation`) {
		t.Fatalf("mixed text: exit %d: %s", code, stdout)
	}
	// Without --allow-private-bundles a file's entry may not point at a
	// bundle on 127.0.0.1: it fails at fetch, and says the flag.
	code, stdout, stderr = runHTTPS(t, srv.Client(), "registry", "verify", goodFile, "--policy", pol, "--format", "json")
	if code != 1 || !strings.Contains(stdout, `"step":"fetch"`) || !strings.Contains(stdout, "127.0.0.1 is a loopback address") || !strings.Contains(stdout, "(--allow-private-bundles fetches") {
		t.Fatalf("bundle on loopback: exit %d: %s%s", code, stdout, stderr)
	}
}

func TestRegistryUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.json")
	os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"repositorySigner":{}}}}`), 0o644)
	entries := filepath.Join(dir, "e.jsonl")
	os.WriteFile(entries, []byte(`{"name":"io.github.other/x","version":"1"}`), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"registry", "verify", entries}, 2, "policy"},
		{[]string{"registry", "verify", entries, "--policy", pol, "--shard", "4/4"}, 2, "--shard"},
		{[]string{"registry", "verify", filepath.Join(dir, "none"), "--policy", pol}, 2, "no such file"},
		{[]string{"registry", "verify", "http://registry.example.com", "--policy", pol}, 2, "https"},
		{[]string{"registry", "verify", entries, "--policy", pol}, 1, "at step policy"},
		{[]string{"registry", "verify", entries, "--policy", pol}, 1, "no policy server matches            1"},
		{[]string{"registry", "hint", entries}, 2, "--bundle-url"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q: %s%s", c.args, code, c.code, c.want, stdout, stderr)
		}
	}
	// A failed run writes no verified dump.
	out := filepath.Join(dir, "v.json")
	if code, _, _ := runCLI(t, "registry", "verify", "http://registry.example.com", "--policy", pol, "--verified-out", out); code != 2 {
		t.Fatal(code)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("verified dump written on failure: %v", err)
	}
}

func TestRegistryHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "server.json")
	orig := "{\n\t\"name\": \"io.github.acme/notes\",\n\t\"version\": \"1.0.0\"\n}\n"
	os.WriteFile(p, []byte(orig), 0o600)
	d := "sha256:" + strings.Repeat("ab", 32)
	code, stdout, stderr := runCLI(t, "registry", "hint", p, "--bundle-url", "https://example.com/b.json", "--bundle-digest", d)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	got, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(got), "{\n\t\"name\": \"io.github.acme/notes\",\n\t\"version\": \"1.0.0\",\n\t\"_meta\": ") {
		t.Fatalf("bytes not kept:\n%s", got)
	}
	e, err := registry.ParseServer(got, registry.Limits{})
	if err != nil || len(e.Pointers) != 1 || e.Pointers[0].Digest != d {
		t.Fatalf("%+v %v", e, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if code, _, stderr := runCLI(t, "registry", "hint", p, "--bundle-url", "http://example.com/b.json", "--bundle-digest", d); code != 2 || !strings.Contains(stderr, "https") {
		t.Fatalf("http URL: %d %s", code, stderr)
	}
}

// TestRegistryInterrupted: a run stopped by SIGINT exits 130, by SIGTERM
// (or any other cancellation) 2, never 1 as for an entry that failed, and
// leaves --verified-out as it was. The command's context
// is cancelled with the cause main's watcher gives (interrupt.Notify).
func TestRegistryInterrupted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cause os.Signal
		code  int
	}{
		{os.Interrupt, 130},
		{syscall.SIGTERM, 2},
	} {
		t.Run(c.cause.String(), func(t *testing.T) {
			t.Parallel()
			stalled := make(chan struct{}, 8)
			var srv *httptest.Server
			srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/bundle" {
					stalled <- struct{}{}
					<-r.Context().Done()
					return
				}
				e := `{"server":{"name":"io.github.acme/notes","version":"1","_meta":{"` + registry.PublisherProvided + `":{"` + registry.AttestationMember +
					`":{"bundleUrl":"` + srv.URL + `/bundle","bundleDigest":"sha256:` + strings.Repeat("1", 64) + `"}}}}}`
				fmt.Fprint(w, `{"servers":[`+e+`],"metadata":{}}`)
			}))
			defer srv.Close()
			dir := t.TempDir()
			pol := filepath.Join(dir, "p.json")
			os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"identities":[{"method":"key","key":"k.pem"}]}}}`), 0o644)
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			os.WriteFile(filepath.Join(dir, "k.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
			out := filepath.Join(dir, "verified.json")
			os.WriteFile(out, []byte("[]\n"), 0o644)
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				<-stalled
				cancel(&interrupt.Error{Signal: c.cause})
			}()
			var stdout, stderr bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" },
				isTerminal: func() bool { return false }, httpClient: srv.Client()}
			code := run(ctx, []string{"registry", "verify", srv.URL, "--policy", pol, "--verified-out", out}, a)
			if code != c.code || !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "left as it was") {
				t.Fatalf("exit %d, want %d: %s%s", code, c.code, stdout.String(), stderr.String())
			}
			if b, _ := os.ReadFile(out); string(b) != "[]\n" {
				t.Fatalf("--verified-out replaced: %q", b)
			}
		})
	}
}
