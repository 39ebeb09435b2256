package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

// TestPolicyOnPinVerifyPinAndProxy: --policy FILE --name NAME on pin,
// verify-pin and proxy: the lock, the key and the bundle come from the
// policy; a lock resting on a revoked bundle blocks at start.
func TestPolicyOnPinVerifyPinAndProxy(t *testing.T) {
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	out := filepath.Join(dir, "demo")
	if code, _, stderr := runWith(t, map[string]string{envDemoServer: server}, "demo", "--keep", out); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	bundleDigest := func() string {
		l, err := pin.Read(filepath.Join(dir, "notes.lock"))
		if err != nil {
			t.Fatal(err)
		}
		return l.Approval.BundleDigest
	}
	write := func(name, extra, serverExtra string) string {
		return vtWrite(t, dir, name, []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"}],"bundle":"demo/server.sigstore.json","lock":"notes.lock"%s},
		             "scratch":{"unsigned":"tofu"}}%s}`, serverExtra, extra)))
	}
	pol := write("policy.json", "", "")

	// pin: the lock goes where the policy says, verified by the policy's key.
	if code, stdout, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--", server); code != 0 || !strings.Contains(stdout, "pinned") {
		t.Fatalf("pin --policy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if l, err := pin.Read(filepath.Join(dir, "notes.lock")); err != nil || l.Approval.Method != evidence.MethodKey {
		t.Fatalf("policy lock: %v", err)
	}
	if code, _, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--lock", "x.lock", "--", server); code != 2 || !strings.Contains(stderr, "--lock and --policy") {
		t.Errorf("pin --lock with --policy: exit %d %q", code, stderr)
	}
	// A tofu server's lock goes under the state directory, named after it.
	if code, _, stderr := runCLI(t, "pin", "--policy", pol, "--name", "scratch", "--", server); code != 0 || !strings.Contains(stderr, "tofu") {
		t.Errorf("pin tofu under a policy: exit %d %q", code, stderr)
	}
	if _, err := pin.Read(filepath.Join(dir, "state", "mcpsign", "locks", "scratch.mcpsign.lock")); err != nil {
		t.Errorf("default lock: %v", err)
	}

	// verify-pin: the policy's lock.
	if code, stdout, stderr := runCLI(t, "verify-pin", "--policy", pol, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("verify-pin --policy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	revoked := write("revoked.json", fmt.Sprintf(`,"revoked":{"bundles":[%q]}`, bundleDigest()), "")
	code, stdout, _ := runCLI(t, "verify-pin", "--policy", revoked, "--name", "notes", "--fail-on", "never", "--", server)
	if code != 1 || !strings.Contains(stdout, policy.RuleRevoked) || !strings.Contains(stdout, "revoked bundle") {
		t.Errorf("verify-pin, revoked bundle: exit %d\n%s", code, stdout)
	}

	// proxy: an honest session under the policy's lock.
	s := startCLI(t, nil, "proxy", "--policy", pol, "--name", "notes", "--", server)
	cs, _, err := s.client(t)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Fatalf("proxy --policy: exit %d", code)
	}
	// A rug pull: mode block (the default) blocks it; warn relays it and
	// reports it on stderr; audit relays it and only records it.
	s = startCLI(t, nil, "proxy", "--policy", pol, "--name", "notes", "--", server, "--mode", "rugpull")
	if _, _, err := s.client(t); err == nil {
		t.Fatal("rug pull under mode block was not blocked")
	}
	if code := s.exit(t); code != proxycmd.ExitBlocked {
		t.Errorf("rug pull, block: exit %d", code)
	}
	auditLog := filepath.Join(dir, "audit.jsonl")
	warnedBefore := 0
	for _, mode := range []string{"warn", "audit"} {
		p := write(mode+".json", "", fmt.Sprintf(`,"mode":%q,"audit":"audit.jsonl"`, mode))
		s = startCLI(t, nil, "proxy", "--policy", p, "--name", "notes", "--", server, "--mode", "rugpull")
		cs, _, err := s.client(t)
		if err != nil {
			t.Fatalf("rug pull under mode %s: %v", mode, err)
		}
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Errorf("mode %s: tools/list %v", mode, err)
		}
		cs.Close()
		if code := s.exit(t); code != 0 {
			t.Errorf("mode %s: exit %d", mode, code)
		}
		warned := strings.Contains(s.stderr.String(), "WARNING: mode warn: drift relayed")
		if warned != (mode == "warn") || (mode == "warn" && !strings.Contains(s.stderr.String(), "pin-tool-")) {
			t.Errorf("mode %s: stderr %s", mode, s.stderr.String())
		}
		n := strings.Count(string(mustRead(t, auditLog)), `"event":"warned"`)
		if n <= warnedBefore {
			t.Errorf("mode %s: no new warned event in the audit log", mode)
		}
		warnedBefore = n
	}
	if code, _, stderr := runCLI(t, "proxy", "--policy", write("noaudit.json", "", `,"mode":"audit"`), "--name", "notes", "--", server); code != 2 || !strings.Contains(stderr, "mode audit") {
		t.Errorf("mode audit without a log: exit %d %q", code, stderr)
	}
	// A revoked bundle blocks at start, naming it, before the server runs.
	code, _, stderr := runCLI(t, "proxy", "--policy", revoked, "--name", "notes", "--", server)
	if code != proxycmd.ExitBlocked || !strings.Contains(stderr, policy.RuleRevoked) || !strings.Contains(stderr, bundleDigest()) {
		t.Errorf("proxy, revoked bundle: exit %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "proxy", "--policy", pol, "--name", "notes", "--tofu", "--", server); code != 2 || !strings.Contains(stderr, "--tofu and --policy") {
		t.Errorf("proxy --tofu with --policy: exit %d %q", code, stderr)
	}
	// First use under the policy: no lock yet, the policy's bundle verifies.
	if err := os.Remove(filepath.Join(dir, "notes.lock")); err != nil {
		t.Fatal(err)
	}
	s = startCLI(t, nil, "proxy", "--policy", pol, "--name", "notes", "--", server)
	if cs, _, err = s.client(t); err != nil {
		t.Fatalf("first use: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Fatalf("first use: exit %d", code)
	}
	if l, err := pin.Read(filepath.Join(dir, "notes.lock")); err != nil || l.Approval.Method != evidence.MethodKey {
		t.Errorf("first use lock: %v", err)
	}

	// The hand-over to mcpsign-proxy: the policy is resolved here (the lock,
	// the rules), and proxy-verify gets --policy (absolute) and --name.
	var gotCfg *proxycmd.Config
	var gotArgs []string
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" },
		isTerminal:    func() bool { return false },
		handOverProxy: func(cfg *proxycmd.Config, args []string) (bool, error) { gotCfg, gotArgs = cfg, args; return true, nil }}
	rel, _ := filepath.Rel(mustGetwd(t), pol)
	if code := run(context.Background(), []string{"proxy", "--policy", rel, "--name", "notes", "--", server}, a); code != 0 {
		t.Fatalf("hand-over: exit %d: %s", code, a.stderr)
	}
	if gotCfg.Lock != filepath.Join(dir, "notes.lock") || !slices.Contains(gotArgs, "--policy="+pol) || !slices.Contains(gotArgs, "--name=notes") {
		t.Errorf("hand-over config %+v, verify args %q", gotCfg, gotArgs)
	}
	// proxy-verify under the policy answers for the definitions it is given.
	snapFile := filepath.Join(dir, "notes.snapshot.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", snapFile, "--", server); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	for _, tc := range []struct {
		policy string
		code   int
	}{{pol, 0}, {revoked, 1}} {
		var outb, errb bytes.Buffer
		a := &app{stdin: bytes.NewReader(mustRead(t, snapFile)), stdout: &outb, stderr: &errb, getenv: func(string) string { return "" }, isTerminal: func() bool { return false }}
		if code := run(context.Background(), append([]string{proxyVerifyCommand}, "--policy="+tc.policy, "--name=notes"), a); code != tc.code {
			t.Errorf("proxy-verify --policy %s: exit %d, want %d: %s", tc.policy, code, tc.code, errb.String())
		}
		if tc.code == 1 && !strings.Contains(errb.String(), "revoked bundle") {
			t.Errorf("proxy-verify, revoked: %s", errb.String())
		}
	}
}

func mustGetwd(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
