package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestRegistryServeRefusesAtStart: a dump that does not read, or holds
// an entry mcpsign did not verify, ends registry serve at start with exit
// 2 and one line naming the flag and the entry.
func TestRegistryServeRefusesAtStart(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join("testdata", "registry-serve", "verified.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, dump, want string
	}{
		{"not JSON", `[{"name":`, "--dump"},
		{"unverified", strings.Replace(string(good), `"dev.mcpsign/verified"`, `"dev.mcpsign/other"`, 1), `"io.github.acme/notes" "1.0.0"`},
		{"missing", "", "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if c.dump != "" {
				os.WriteFile(path, []byte(c.dump), 0o644)
			}
			code, stdout, stderr := runWith(t, nil, "registry", "serve", "--listen", "127.0.0.1:0", "--dump", path)
			if code != exitError || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d: %q %q", code, stdout, stderr)
			}
		})
	}
	for _, args := range [][]string{
		{"registry", "serve", "--listen", "127.0.0.1:0"},
		{"registry", "serve", "--listen", "127.0.0.1:0", "--dump", "x", "--verify", "y"},
		{"registry", "serve", "--listen", "127.0.0.1:0", "--verify", "y"},
		{"registry", "serve", "--dump", "x"},
	} {
		if code, _, stderr := runWith(t, nil, args...); code != exitError || stderr == "" {
			t.Errorf("%v: exit %d %q", args, code, stderr)
		}
	}
}

// TestRegistryServeProcess runs registry serve as a process: it serves
// the dump, keeps it when a SIGHUP finds a dump with an unverified entry
// (and logs why), takes a good one on the next SIGHUP, and ends on
// SIGTERM with exit 0.
func TestRegistryServeProcess(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	src := filepath.Join("testdata", "registry-serve")
	good, _ := os.ReadFile(filepath.Join(src, "verified.json"))
	two, _ := os.ReadFile(filepath.Join(src, "verified-2.json"))
	dump := filepath.Join(t.TempDir(), "verified.json")
	if err := os.WriteFile(dump, good, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpsign, "registry", "serve", "--listen", "127.0.0.1:0", "--dump", dump)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait := func(sub string) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before %q", sub)
				}
				if strings.Contains(l, sub) {
					return l
				}
			case <-deadline:
				t.Fatalf("no line with %q", sub)
			}
		}
	}
	l := wait("registry serve: ")
	base := strings.TrimSuffix(l[strings.Index(l, "http://"):], "/v0.1/servers")
	count := func() int {
		t.Helper()
		resp, err := http.Get(base + "/v0.1/servers")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct{ Metadata struct{ Count int } }
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return page.Metadata.Count
	}
	if n := count(); n != 5 {
		t.Fatalf("%d entries served", n)
	}
	// CORS as Copilot's clients need it, and the service's health route.
	req, _ := http.NewRequest(http.MethodGet, base+"/v0.1/servers/io.github.acme%2Fnotes/versions/latest", nil)
	req.Header.Set("Origin", "vscode-file://vscode-app")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") == "" || resp.Header.Get("ETag") == "" {
		t.Errorf("CORS: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, err := http.Get(base + "/metrics"); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "mcpsign_registry_served_entries 5") {
			t.Errorf("/metrics has no served entries gauge")
		}
		if !strings.Contains(string(b), `route="/v0.1/servers/{name}/versions/{version}"`) {
			t.Errorf("/metrics does not label the routes:\n%s", b)
		}
	}
	os.WriteFile(dump, []byte(strings.Replace(string(good), `"dev.mcpsign/verified"`, `"dev.mcpsign/other"`, 1)), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	if l := wait("registry reload refused"); !strings.Contains(l, `"entries":5`) {
		t.Errorf("log line: %s", l)
	}
	if n := count(); n != 5 {
		t.Errorf("after a refused reload: %d entries", n)
	}
	os.WriteFile(dump, two, 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	wait(`"msg":"registry set reloaded"`)
	if n := count(); n != 2 {
		t.Errorf("after a reload: %d entries", n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// TestRegistryServeVerify: --verify runs registry verify's code over the
// source and serves only what verified (here nothing: the entries list no
// bundle), and a source that cannot be read ends it at start with exit 2.
func TestRegistryServeVerify(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	dir := t.TempDir()
	src, pol := filepath.Join(dir, "entries.jsonl"), filepath.Join(dir, "policy.json")
	os.WriteFile(src, []byte(`{"name":"a/b","version":"1","description":"d"}`+"\n"), 0o644)
	os.WriteFile(pol, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), 0o644)
	cmd := exec.Command(mcpsign, "registry", "serve", "--listen", "127.0.0.1:0", "--verify", src, "--policy", pol, "--offline")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	found := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "registry serve: 0 entries on http://127.0.0.1:") {
			found = true
			break
		}
	}
	if !found {
		t.Fatal("no listening line")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	code, _, errs := runWith(t, nil, "registry", "serve", "--listen", "127.0.0.1:0", "--verify", filepath.Join(dir, "none.jsonl"), "--policy", pol)
	if code != exitError || !strings.Contains(errs, "--verify") {
		t.Errorf("a source that does not read: exit %d %q", code, errs)
	}
}

// TestRegistryServeListenRefused: a --listen the listen rule refuses (plain
// HTTP off loopback) ends registry serve with exit 2 naming the flag,
// without first saying that it serves there.
func TestRegistryServeListenRefused(t *testing.T) {
	t.Parallel()
	dump := filepath.Join("testdata", "registry-serve", "verified.json")
	for _, tc := range []struct{ name, listen string }{
		{"every address", "0.0.0.0:0"},
		{"every address, IPv6", "[::]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runWith(t, nil, "registry", "serve", "--listen", tc.listen, "--dump", dump)
			if code != exitError || !strings.Contains(stderr, "--listen") || strings.Contains(stderr, "registry serve: ") {
				t.Fatalf("exit %d: %q", code, stderr)
			}
		})
	}
}

// TestRegistryServeExamplesListen: every example of registry serve's help
// that listens off loopback gives what the listen rule asks there (a TLS
// pair, or --allow-plaintext): an example a user copies must start.
func TestRegistryServeExamplesListen(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "registry", "serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ex, _, _ := strings.Cut(stdout[strings.Index(stdout, "Examples:"):], "Flags:")
	for _, cmd := range strings.Split(strings.ReplaceAll(ex, "\\\n", " "), "\n") {
		f := strings.Fields(cmd)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "--listen" {
				continue
			}
			host, _, _ := strings.Cut(f[i+1], ":")
			if host != "127.0.0.1" && host != "localhost" && !strings.Contains(cmd, "--tls-cert") && !strings.Contains(cmd, "--allow-plaintext") {
				t.Errorf("an example listens on %s without TLS, which is refused:\n%s", f[i+1], cmd)
			}
		}
	}
}
