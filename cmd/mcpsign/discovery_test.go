package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// discoveryFiles are the key pairs and bundles the discovery tests share:
// alice signs the honest and the rug-pull definitions, mallory the honest
// (the shared keys, sharedKeys; their password is keysEnv's).
type discoveryFiles struct {
	dir, server              string
	honest, rugpull, mallory string // bundles
	alice, malloryKey        keyPair
	alicePub                 string
	malformed, oversized     string
}

// discoverySetup makes the files of one test in its temporary directory.
func discoverySetup(t *testing.T) discoveryFiles {
	t.Helper()
	// Made once for the tests that use it: three signatures cost seconds
	// of key derivation under -race.
	discovery.once.Do(func() {
		discovery.d = makeDiscoveryFiles(t)
		discovery.ok = !t.Failed()
	})
	if !discovery.ok {
		t.Fatal("the discovery fixtures could not be made (see the first test that used them)")
	}
	return discovery.d
}

var discovery struct {
	once sync.Once
	d    discoveryFiles
	ok   bool
}

func makeDiscoveryFiles(t *testing.T) discoveryFiles {
	t.Helper()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := fixtures.SharedDir(t, "discovery")
	alice, mallory := sharedKeys(t)
	sign := func(who keyPair, out string, server ...string) string {
		p := filepath.Join(dir, out)
		args := append([]string{"sign", "key", "--key", who.key, "--password-env", "PW", "-o", p, "--"}, server...)
		if code, _, stderr := runSetup(t, keysEnv(), args...); code != 0 {
			t.Fatalf("sign: %s", stderr)
		}
		return p
	}
	d := discoveryFiles{dir: dir, server: server, alice: alice, malloryKey: mallory, alicePub: alice.pub}
	d.honest = sign(alice, "honest.sigstore.json", server)
	d.rugpull = sign(alice, "rugpull.sigstore.json", server, "--mode", "rugpull")
	d.mallory = sign(mallory, "mallory.sigstore.json", server)
	d.malformed = filepath.Join(dir, "malformed.sigstore.json")
	d.oversized = filepath.Join(dir, "oversized.sigstore.json")
	for path, data := range map[string]string{
		d.malformed: `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":1}`,
		d.oversized: `{"mediaType":"` + strings.Repeat("a", 16<<20) + `"}`,
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// runHTTPS is runWith with a client that trusts the test's TLS server.
func runHTTPS(t *testing.T, client *http.Client, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(string) string { return "" },
		isTerminal: func() bool { return false },
		httpClient: client,
	}
	code = run(context.Background(), args, a)
	return code, out.String(), errb.String()
}

func fileSHA(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// inlineSHA is the bundle digest of a bundle file carried in a hello: over
// the bytes received, which the example server's SDK sends compacted.
func inlineSHA(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		t.Fatal(err)
	}
	return verify.BundleDigest(b.Bytes())
}

// TestVerifyBundleFromServer: a server that advertises its bundle, in
// either protocol generation, inline or by URL, verifies as a bundle file
// would; one that advertises a bundle for other definitions, by another
// signer, a malformed, oversized or missing one is refused at the step
// that fails, and no lock is written.
func TestVerifyBundleFromServer(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	d := discoverySetup(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/honest.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, d.honest) })
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, d.oversized) })
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(ts.Close) // after the rows, which run in parallel
	legacy := []string{"--protocol-versions", "2025-11-25"}
	// The oversized inline row reads one face only (the 2026-07-28 era's,
	// where the advertisement is inline as in every other): its subject is
	// the refusal of a bundle too large, not the reading of every face, and
	// each face moves 16 MiB through the strict reader (seconds of CPU under
	// -race, five times over).
	oneFace := []string{"--protocol-version", "2026-07-28"}
	tests := []struct {
		name      string
		server    []string // the example server's flags
		code      int
		stdoutHas string
		flags     []string // verify's flags beyond the common ones
	}{
		{"modern, inline", []string{"--bundle", d.honest}, 0, "VERIFIED mcpsign-example", nil},
		{"legacy, inline", append([]string{"--bundle", d.honest}, legacy...), 0, "VERIFIED mcpsign-example", nil},
		{"by URL with its digest", []string{"--bundle-url", ts.URL + "/honest.json", "--bundle-digest", fileSHA(t, d.honest)}, 0, "VERIFIED mcpsign-example", nil},
		{"legacy, by URL", append([]string{"--bundle-url", ts.URL + "/honest.json"}, legacy...), 0, "VERIFIED mcpsign-example", nil},
		{"other definitions", []string{"--bundle", d.rugpull}, 1, "FAILED at step match", nil},
		{"another signer", []string{"--bundle", d.mallory}, 1, "FAILED at step signature", nil},
		{"malformed bundle", []string{"--bundle", d.malformed}, 2, "FAILED at step bundle", nil},
		{"oversized inline", []string{"--bundle", d.oversized}, 2, "FAILED at step bundle: the bundle the server advertises: advertised attestation: bundle: file too large", oneFace},
		{"oversized at its URL", []string{"--bundle-url", ts.URL + "/big.json"}, 2, "FAILED at step bundle: the bundle the server advertises: " + ts.URL + "/big.json: file too large", nil},
		{"URL digest mismatch", []string{"--bundle-url", ts.URL + "/honest.json", "--bundle-digest", fileSHA(t, d.mallory)}, 2, "bundle digest mismatch", nil},
		{"plain http URL", []string{"--bundle-url", strings.Replace(ts.URL, "https:", "http:", 1) + "/honest.json"}, 2, "is not an https URL", nil},
		{"none advertised", nil, 2, "advertises no attestation", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// At once: each row mostly waits for its server, and the two
			// oversized ones need seconds under -race.
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "l.lock")
			// The oversized rows move 16 MiB through the strict reader:
			// under -race on a loaded machine that outlasted the default
			// 30 s (and 2 min when the inline one read all five faces).
			args := append(append([]string{"verify", "key", "--bundle-from-server", "--key", d.alicePub, "--write-lock", lock,
				"--max-message-bytes", "40000000", "--timeout", "5m"}, tt.flags...), append([]string{"--", d.server}, tt.server...)...)
			code, stdout, stderr := runHTTPS(t, ts.Client(), args...)
			if code != tt.code || !strings.Contains(stdout, tt.stdoutHas) {
				t.Fatalf("exit %d (want %d), want %q in\n%s%s", code, tt.code, tt.stdoutHas, stdout, stderr)
			}
			_, err := os.Stat(lock)
			if written := err == nil; written != (tt.code == 0) {
				t.Errorf("lock written: %v", written)
			}
		})
	}
	// --bundle with both, and --bundle URL itself.
	if code, _, stderr := runCLI(t, "verify", "key", "--bundle", d.honest, "--bundle-from-server", "--key", d.alicePub, "--", d.server); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("both: exit %d %s", code, stderr)
	}
	lock := filepath.Join(t.TempDir(), "l.lock")
	if code, stdout, stderr := runHTTPS(t, ts.Client(), "verify", "key", "--bundle", ts.URL+"/honest.json", "--key", d.alicePub, "--write-lock", lock, "--", d.server); code != 0 {
		t.Errorf("--bundle URL: exit %d %s%s", code, stdout, stderr)
	}
	for name, url := range map[string]string{
		"too large":    ts.URL + "/big.json",
		"plain http":   strings.Replace(ts.URL, "https:", "http:", 1) + "/honest.json",
		"not found":    ts.URL + "/none.json",
		"another port": "https://127.0.0.1:1/honest.json",
	} {
		lock := filepath.Join(t.TempDir(), "l.lock")
		code, _, stderr := runHTTPS(t, ts.Client(), "verify", "key", "--bundle", url, "--key", d.alicePub, "--write-lock", lock, "--", d.server)
		if code != 2 || !strings.Contains(stderr, "--bundle: ") {
			t.Errorf("--bundle %s: exit %d %s", name, code, stderr)
		}
		if _, err := os.Stat(lock); err == nil {
			t.Errorf("--bundle %s: a lock was written", name)
		}
	}
}

// TestPinBundleFromServer: pin takes the advertised bundle too.
func TestPinBundleFromServer(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	d := discoverySetup(t)
	lock := filepath.Join(t.TempDir(), "l.lock")
	code, stdout, stderr := runCLI(t, "pin", "--lock", lock, "--bundle-from-server", "--key", d.alicePub, "--", d.server, "--bundle", d.honest)
	if code != 0 || !strings.Contains(stdout, "approval: key sha256:") {
		t.Fatalf("pin: exit %d\n%s%s", code, stdout, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil || l.Approval.Method != verify.MethodKey || l.Approval.BundleDigest != inlineSHA(t, d.honest) {
		t.Fatalf("lock %v %+v", err, l.Approval)
	}
	lock2 := filepath.Join(t.TempDir(), "l.lock")
	code, stdout, stderr = runCLI(t, "pin", "--lock", lock2, "--bundle-from-server", "--key", d.alicePub, "--", d.server, "--bundle", d.rugpull)
	if code != 1 || !strings.Contains(stdout, "FAILED at step match") || !strings.Contains(stderr, "nothing pinned") {
		t.Errorf("other definitions: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(lock2); err == nil {
		t.Error("a lock was written")
	}
	if code, _, stderr := runCLI(t, "pin", "--lock", lock2, "--bundle-from-server", "--tofu", "--", d.server); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("--tofu: exit %d %s", code, stderr)
	}
}

// TestProxyBundleFromServer: the proxy verifies the advertised bundle on
// first start and writes the lock (both protocol generations); a bundle by
// another signer or for other definitions blocks, and no lock is written.
func TestProxyBundleFromServer(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	d := discoverySetup(t)
	tests := []struct {
		name    string
		server  []string
		allowed bool
	}{
		{"modern", []string{"--bundle", d.honest}, true},
		{"legacy", []string{"--bundle", d.honest, "--protocol-versions", "2025-11-25"}, true},
		{"another signer", []string{"--bundle", d.mallory}, false},
		{"other definitions", []string{"--bundle", d.rugpull, "--protocol-versions", "2025-11-25"}, false},
		{"malformed", []string{"--bundle", d.malformed}, false},
		{"none advertised", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "l.lock")
			s := startCLI(t, nil, append([]string{"proxy", "--lock", lock, "--bundle-from-server", "--key", d.alicePub, "--", d.server}, tt.server...)...)
			cs, _, err := s.client(t)
			if tt.allowed {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				cs.Close()
				if code := s.exit(t); code != 0 {
					t.Fatalf("exit %d", code)
				}
				l, err := pin.Read(lock)
				if err != nil || l.Approval.Method != verify.MethodKey || l.Approval.BundleDigest != inlineSHA(t, d.honest) {
					t.Fatalf("lock %v %+v", err, l.Approval)
				}
				return
			}
			if err == nil {
				cs.Close()
				t.Fatal("the session was allowed")
			}
			if code := s.exit(t); code != proxycmd.ExitBlocked {
				t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
			}
			if _, err := os.Stat(lock); err == nil {
				t.Error("a lock was written")
			}
		})
	}
}

// TestProxyHandOverBundleFromServer: as a host runs it, 'mcpsign proxy'
// hands over to mcpsign-proxy, which links no verifier and gives the
// advertised capabilities to 'mcpsign proxy-verify' (proxy.CommandVerifier).
func TestProxyHandOverBundleFromServer(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	d := discoverySetup(t)
	mcpsign := fixtures.BuildMcpsign(t)
	for _, tt := range []struct {
		name    string
		server  []string
		allowed bool
	}{
		{"modern", []string{"--bundle", d.honest}, true},
		{"legacy", []string{"--bundle", d.honest, "--protocol-versions", "2025-11-25"}, true},
		{"another signer", []string{"--bundle", d.mallory, "--protocol-versions", "2025-11-25"}, false},
		{"other definitions", []string{"--bundle", d.rugpull}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "l.lock")
			argv := append([]string{mcpsign, "proxy", "--lock", lock, "--bundle-from-server", "--key", d.alicePub, "--", d.server}, tt.server...)
			p, err := startProxyProcess(t, argv...)
			if (err == nil) != tt.allowed {
				t.Fatalf("connect: %v, want allowed %v", err, tt.allowed)
			}
			code := p.end(t)
			_, statErr := os.Stat(lock)
			if !tt.allowed {
				if code != proxycmd.ExitBlocked || statErr == nil {
					t.Fatalf("exit %d, lock written %v; want %d and no lock", code, statErr == nil, proxycmd.ExitBlocked)
				}
				return
			}
			l, err := pin.Read(lock)
			if code != 0 || err != nil || l.Approval.BundleDigest != inlineSHA(t, d.honest) {
				t.Fatalf("exit %d, lock %v %+v", code, err, l.Approval)
			}
			if !strings.Contains(p.stderr.String(), "signed first use: verified") {
				t.Errorf("stderr:\n%s", p.stderr.String())
			}
		})
	}
}
