package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/rekorv1"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
)

// TestMonitorCommand signs two releases as one identity with 'mcpsign sign
// sigstore' on the local stack, keeps one as released, and watches the
// stack's Rekor v2 log (its tiles published read-only by a file server, as
// a bucket publishes a production log's).
func TestMonitorCommand(t *testing.T) {
	env := sigstack.Require(t)
	storage := filepath.Join(env.State, "data", "rekor")
	srv := httptest.NewServer(http.FileServer(http.Dir(storage)))
	defer srv.Close()
	dir := t.TempDir()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	email := "release-" + hex.EncodeToString(b) + "@monitor.example.com"
	state := filepath.Join(dir, "state.json")
	watch := []string{"--state", state, "--trusted-root", env.TrustedRoot, "--certificate-identity", email, "--certificate-oidc-issuer", env.OIDCIssuer}

	if code, out, stderr := runCLI(t, "monitor", "--once", "--log", srv.URL, "--state", state, "--trusted-root", env.TrustedRoot, "--certificate-identity", email, "--certificate-oidc-issuer", env.OIDCIssuer); code != 2 || !strings.Contains(stderr, "--init") {
		t.Fatalf("no state: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, bad := range [][]string{
		{"--ca-roots", "roots.pem"},
		{"--certificate-email", "a@example.com"},
		{"--follow", "--once"},
		{"--from-index", "3"},
		{"--registry-server", "io.github.acme/*"},
	} {
		if code, out, stderr := runCLI(t, append(append([]string{"monitor", "--log", srv.URL}, watch...), bad...)...); code != 2 {
			t.Fatalf("%v: exit %d\n%s\n%s", bad, code, out, stderr)
		}
	}
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--init", "--log", srv.URL}, watch...)...); code != 0 || !strings.Contains(out, "state written") {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, stderr)
	}
	// A watched entry of a released registry whose bundle cannot be had is
	// an error naming it, not a skipped entry.
	reg := vtWrite(t, dir, "registry.json", []byte(`{"name":"io.github.acme/notes","version":"1.0.0","description":"d","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"dev.mcpsign/attestation":{"bundleUrl":"https://127.0.0.1:1/b.sigstore.json","bundleDigest":"sha256:`+strings.Repeat("1", 64)+`"}}}}`))
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--log", srv.URL, "--released-registry", reg, "--registry-server", "io.github.acme/*", "--allow-private-bundles"}, watch...)...); code != 2 ||
		!strings.Contains(stderr, `"io.github.acme/notes"`) || !strings.Contains(stderr, "https://127.0.0.1:1/b.sigstore.json") || strings.Contains(stderr, "not public") {
		t.Fatalf("unfetchable registry bundle: exit %d\n%s\n%s", code, out, stderr)
	}
	// Without --allow-private-bundles, a file's entries may not point at
	// 127.0.0.1: refused, and the error says the flag.
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--log", srv.URL, "--released-registry", reg, "--registry-server", "io.github.acme/*"}, watch...)...); code != 2 ||
		!strings.Contains(stderr, "127.0.0.1 is a loopback address") || !strings.Contains(stderr, "--allow-private-bundles") {
		t.Fatalf("registry bundle on loopback: exit %d\n%s\n%s", code, out, stderr)
	}
	tok := vtWrite(t, dir, "token", []byte(env.FreshToken(t, email)))
	released := filepath.Join(dir, "dist")
	if err := os.Mkdir(released, 0o755); err != nil {
		t.Fatal(err)
	}
	var last int64
	var rogue int64
	for i, out := range []string{filepath.Join(released, "v1.sigstore.json"), filepath.Join(dir, "rogue.sigstore.json")} {
		snap, _ := vtSnapshot(t, dir, "snap"+strconv.Itoa(i)+".json", func(s *digest.Snapshot) {
			ins := "release " + strconv.Itoa(i) + " " + email
			s.Instructions = &ins
		})
		code, stdout, stderr := runCLI(t, "sign", "sigstore", snap, "-o", out, "--signing-config", env.SigningConfig,
			"--trusted-root", env.TrustedRoot, "--identity-token", tok, "--format", "json")
		if code != 0 {
			t.Fatalf("sign: exit %d\n%s\n%s", code, stdout, stderr)
		}
		var rep struct {
			Tlog []struct {
				LogIndex int64 `json:"logIndex"`
			} `json:"tlog"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Tlog) != 1 {
			t.Fatalf("sign output %s: %v", stdout, err)
		}
		last = rep.Tlog[0].LogIndex
	}
	rogue = last
	waitCheckpoint(t, storage, uint64(last)+1)

	// Findings that cannot be written are not reported: exit 2, and the
	// state stays, so that the next run reports them.
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: failingWriter{}, stderr: &errb, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
	if code := run(context.Background(), append([]string{"monitor", "--once", "--released", released}, watch...), a); code != 2 || !strings.Contains(errb.String(), "state not written") {
		t.Fatalf("unwritable output: exit %d\n%s", code, errb.String())
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Fatal("the state moved on although its findings were not written")
	}

	code, out, stderr := runCLI(t, append([]string{"monitor", "--once", "--released", released, "--format", "json"}, watch...)...)
	if code != 1 {
		t.Fatalf("monitor: exit %d\n%s\n%s", code, out, stderr)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if m["reportVersion"] != float64(1) {
			t.Fatalf("line %q", sc.Text())
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["kind"] != "unreleased-entry" || lines[0]["logIndex"] != float64(rogue) || lines[0]["identity"] != email ||
		lines[1]["kind"] != "run" || lines[1]["alerts"] != float64(1) || lines[1]["watched"] != float64(2) {
		t.Fatalf("output:\n%s", out)
	}
	// The state moved on: the next run finds nothing.
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--released", released}, watch...)...); code != 0 || !strings.Contains(out, "0 alerts") {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, stderr)
	}
	// A state file that is not ours is an error and is left as it was.
	foreign := []byte(`{"kind":"mcpsign.lock","lockVersion":1}` + "\n")
	if err := os.WriteFile(state, foreign, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--released", released}, watch...)...); code != 2 || !strings.Contains(stderr, "monitor state") {
		t.Fatalf("foreign state: exit %d\n%s\n%s", code, out, stderr)
	}
	if got, _ := os.ReadFile(state); string(got) != string(foreign) {
		t.Fatal("the foreign state file changed")
	}
}

// waitCheckpoint waits until the log's published checkpoint has n entries.
func waitCheckpoint(t *testing.T, storage string, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(filepath.Join(storage, "checkpoint")); err == nil {
			if lines := strings.SplitN(string(data), "\n", 3); len(lines) == 3 {
				if size, err := strconv.ParseUint(lines[1], 10, 64); err == nil && size >= n {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the log's checkpoint did not reach %d entries", n)
}

// TestMonitorFollow runs --follow until its context ends: each check writes
// the state, and the end is exit 0 without an alert.
func TestMonitorFollow(t *testing.T) {
	env := sigstack.Require(t)
	storage := filepath.Join(env.State, "data", "rekor")
	var checks atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fileServer := http.FileServer(http.Dir(storage))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkpoint" && checks.Add(1) == 2 {
			cancel() // the second check is the last
		}
		fileServer.ServeHTTP(w, r)
	}))
	defer srv.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"--state", state, "--log", srv.URL, "--trusted-root", env.TrustedRoot, "--certificate-identity", "nobody@monitor.example.com", "--certificate-oidc-issuer", env.OIDCIssuer}
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--init"}, args...)...); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, stderr)
	}
	checks.Store(0)
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
	code := run(ctx, append([]string{"monitor", "--follow", "--interval", "1s"}, args...), a)
	if code != 0 || checks.Load() < 2 || !strings.Contains(out.String(), "state written") {
		t.Fatalf("follow: exit %d after %d checks\n%s\n%s", code, checks.Load(), out.String(), errb.String())
	}
}

// failingWriter fails every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestMonitorCommandRekorV1 watches a key on a real Rekor v1 log on
// 127.0.0.1 (scripts/rekor-v1/rekor-v1.sh): an unreleased entry is an
// alert with its integrated time, and a log that serves a bad checkpoint
// signature is exit 2 with the state left as it was.
func TestMonitorCommandRekorV1(t *testing.T) {
	v1 := rekorv1.Require(t)
	v1URL := v1.URL
	env := sigstack.Require(t)
	dir := t.TempDir()
	trPath := v1.TrustedRoot(t, env.TrustedRoot, dir)

	pw := map[string]string{"PW": "v1"}
	if code, _, stderr := runWith(t, pw, "keygen", "-o", filepath.Join(dir, "release"), "--password-env", "PW"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	state := filepath.Join(dir, "state.json")
	watch := []string{"--state", state, "--trusted-root", trPath, "--key", filepath.Join(dir, "release.pub")}
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--init", "--log", v1URL}, watch...)...); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, stderr)
	}
	snap, _ := vtSnapshot(t, dir, "snap.json", nil)
	bundle := filepath.Join(dir, "rogue.sigstore.json")
	if code, out, stderr := runWith(t, pw, "sign", "key", "--key", filepath.Join(dir, "release.key"), "--password-env", "PW", "--tlog-upload",
		"--rekor-url", v1URL, "--rekor-version", "1", "--trusted-root", trPath, snap, "-o", bundle); code != 0 {
		t.Fatalf("sign: exit %d\n%s\n%s", code, out, stderr)
	}
	before := mustRead(t, state)

	// A log whose checkpoint signature is bad: exit 2, the state as it was.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(v1URL + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if r.URL.Path == "/api/v1/log" {
			body = bytes.Replace(body, []byte(`\n— 127.0.0.1 `), []byte(`\n— 127.0.0.1 AAAA`), 1)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = w.Write(body)
	}))
	defer proxy.Close()
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--log", proxy.URL}, watch...)...); code != 2 || !strings.Contains(stderr, "checkpoint") {
		t.Fatalf("bad checkpoint: exit %d\n%s\n%s", code, out, stderr)
	}
	if !bytes.Equal(mustRead(t, state), before) {
		t.Fatal("the state changed after a failed run")
	}

	code, out, stderr := runCLI(t, append([]string{"monitor", "--format", "json"}, watch...)...)
	if code != 1 || !strings.Contains(out, `"kind":"unreleased-entry"`) || !strings.Contains(out, `"integratedTime":"`) || !strings.Contains(out, `"entryKind":"`) {
		t.Fatalf("monitor: exit %d\n%s\n%s", code, out, stderr)
	}
	// Released: nothing to report from the same state.
	if err := os.WriteFile(state, before, 0o600); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(dir, "dist")
	if err := os.Mkdir(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bundle, filepath.Join(rel, "v1.sigstore.json")); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, append([]string{"monitor", "--released", rel}, watch...)...); code != 0 || !strings.Contains(out, "1 by a watched signer, 1 of them released; 0 alerts") {
		t.Fatalf("released: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestMonitorCommandPolicy watches the identities of a policy's servers:
// an entry signed by the chosen server's identity and not released is an
// alert, one by another server's identity is not, and with the identity
// flags both are watched.
func TestMonitorCommandPolicy(t *testing.T) {
	env := sigstack.Require(t)
	storage := filepath.Join(env.State, "data", "rekor")
	srv := httptest.NewServer(http.FileServer(http.Dir(storage)))
	defer srv.Close()
	dir := t.TempDir()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	watched := "release-" + hex.EncodeToString(b) + "@monitor.example.com"
	other := "other-" + hex.EncodeToString(b) + "@monitor.example.com"
	pol := vtWrite(t, dir, "policy.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{
	  "notes":{"identities":[{"method":"sigstore","issuer":"`+env.OIDCIssuer+`","subject":"`+watched+`"}]},
	  "files":{"identities":[{"method":"sigstore","issuer":"`+env.OIDCIssuer+`","subjectRegexp":"^`+other+`$"}]},
	  "corp":{"identities":[{"method":"certificate","subject":"CN=release,O=Corp"}]}}}`))
	state := filepath.Join(dir, "state.json")
	base := []string{"monitor", "--log", srv.URL, "--trusted-root", env.TrustedRoot, "--policy", pol}

	if code, out, stderr := runCLI(t, "monitor", "--init", "--log", srv.URL, "--state", state, "--trusted-root", env.TrustedRoot, "--name", "notes", "--key", pol); code != 2 || !strings.Contains(stderr, "--name is for --policy") {
		t.Fatalf("--name without --policy: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, append(base, "--init", "--state", state, "--name", "corp")...); code != 2 || !strings.Contains(stderr, `policy server "corp"`) || !strings.Contains(stderr, "no identity a log monitor can watch") {
		t.Fatalf("nothing to watch: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, append(base, "--init", "--state", state, "--name", "notes")...); code != 0 || stderr != "" {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, stderr)
	}
	st, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int64
	for i, email := range []string{watched, other} {
		tok := vtWrite(t, dir, "token"+strconv.Itoa(i), []byte(env.FreshToken(t, email)))
		snap, _ := vtSnapshot(t, dir, "snap"+strconv.Itoa(i)+".json", func(s *digest.Snapshot) {
			ins := "release by " + email
			s.Instructions = &ins
		})
		code, stdout, stderr := runCLI(t, "sign", "sigstore", snap, "-o", filepath.Join(dir, strconv.Itoa(i)+".sigstore.json"), "--signing-config", env.SigningConfig,
			"--trusted-root", env.TrustedRoot, "--identity-token", tok, "--format", "json")
		if code != 0 {
			t.Fatalf("sign: exit %d\n%s\n%s", code, stdout, stderr)
		}
		var rep struct {
			Tlog []struct {
				LogIndex int64 `json:"logIndex"`
			} `json:"tlog"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Tlog) != 1 {
			t.Fatalf("sign output %s: %v", stdout, err)
		}
		idx = append(idx, rep.Tlog[0].LogIndex)
	}
	waitCheckpoint(t, storage, uint64(max(idx[0], idx[1]))+1)

	alerts := func(t *testing.T, args ...string) (map[int64]string, string) {
		t.Helper()
		if err := os.WriteFile(state, st, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runCLI(t, append(append(base, "--state", state, "--format", "json"), args...)...)
		if code != 1 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		got := map[int64]string{}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var m struct {
				Kind     string `json:"kind"`
				LogIndex int64  `json:"logIndex"`
				Identity string `json:"identity"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			if m.Kind == "unreleased-entry" {
				got[m.LogIndex] = m.Identity
			}
		}
		return got, stderr
	}
	t.Run("the chosen server's identity", func(t *testing.T) {
		got, stderr := alerts(t, "--name", "notes")
		if len(got) != 1 || got[idx[0]] != watched || stderr != "" {
			t.Fatalf("alerts %v (want %d by %s)\n%s", got, idx[0], watched, stderr)
		}
	})
	t.Run("every server, the unwatchable one a notice", func(t *testing.T) {
		got, stderr := alerts(t)
		if len(got) != 2 || got[idx[0]] != watched || got[idx[1]] != other || !strings.Contains(stderr, `notice: policy server "corp"`) {
			t.Fatalf("alerts %v\n%s", got, stderr)
		}
	})
	t.Run("with the identity flags", func(t *testing.T) {
		got, _ := alerts(t, "--name", "files", "--certificate-identity", watched, "--certificate-oidc-issuer", env.OIDCIssuer)
		if len(got) != 2 || got[idx[0]] != watched || got[idx[1]] != other {
			t.Fatalf("alerts %v", got)
		}
	})
}
