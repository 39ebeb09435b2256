package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

// plWriteLock writes the lock of snap approved by a to path.
func plWriteLock(t *testing.T, snap *digest.Snapshot, a pin.Approval, path string) []byte {
	t.Helper()
	a.ApprovedAt = time.Now().UTC().Truncate(time.Second)
	l, err := pin.NewLock(snap, a)
	if err != nil {
		t.Fatal(err)
	}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return vtWriteBytes(t, path, data)
}

// TestVerifyPinLockOutsidePolicy: under --policy, verify-pin refuses a lock
// the policy would not have approved before it reads the server, naming the
// rule, whatever --fail-on says, and leaves the lock as it is.
func TestVerifyPinLockOutsidePolicy(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	snapPath, snap := vtSnapshot(t, dir, "snap.json", nil)
	_, changed := vtSnapshot(t, dir, "changed.json", func(s *digest.Snapshot) {
		s.Tools = append(s.Tools, json.RawMessage(`{"name":"run_command","description":"Run a command.","inputSchema":{"type":"object"}}`))
	})
	a, b := newPTSigner(t, dir, "a"), newPTSigner(t, dir, "b")
	bA, dA := a.sign(t, dir, "a.sigstore.json", snap)
	bB, dB := b.sign(t, dir, "b.sigstore.json", snap)
	key := func(s *ptSigner) string { return fmt.Sprintf(`{"method":"key","key":%q}`, s.pub) }
	byKey := func(s *ptSigner, d string) pin.Approval {
		return pin.Approval{Method: evidence.MethodKey, Identity: s.keyID(t), BundleDigest: d}
	}
	tofu := pin.Approval{Method: pin.MethodTOFU}
	manual := pin.Approval{Method: pin.MethodManual, Reason: "reviewed", Approver: "alice", PreviousLockDigest: "sha256:" + strings.Repeat("0", 64)}
	// The lock verify writes under a threshold of two: the first bundle's
	// evidence (a's).
	two := ptPolicy(t, dir, "two.json", 2, "", a.pub, b.pub)
	thresholdLock := filepath.Join(dir, "threshold.lock")
	if code, out, stderr := runCLI(t, "verify", snapPath, "--policy", two, "--name", "notes", "--bundle", bA, "--bundle", bB, "--write-lock", thresholdLock); code != 0 {
		t.Fatalf("verify --write-lock: exit %d\n%s\n%s", code, out, stderr)
	}
	// It carries both bundles (its proof, docs/LOCK.md); the rows below
	// that give bundles or none test the lock without it.
	thresholdProven := mustRead(t, thresholdLock)
	thresholdBytes := withoutProof(t, thresholdProven)

	tests := []struct {
		name     string
		ids      []string
		extra    string // more members of the server
		approval pin.Approval
		lockOf   *digest.Snapshot // nil: snap
		lock     []byte           // the lock's bytes, instead of approval
		bundles  []string
		code     int
		rule     string
	}{
		{"key A lock under a key-A policy", []string{key(a)}, "", byKey(a, dA), nil, nil, []string{bA}, 0, ""},
		{"key A lock, no bundle", []string{key(a)}, "", byKey(a, dA), nil, nil, nil, 1, policy.RuleLockUnproven},
		{"key A recorded over other definitions", []string{key(a)}, "", byKey(a, dA), changed, nil, []string{bA}, 1, policy.RuleLockUnproven},
		{"key A lock, key B's bundle", []string{key(a)}, "", byKey(a, dA), nil, nil, []string{bB}, 1, policy.RuleLockUnproven},
		{"key B lock under a key-A policy", []string{key(a)}, "", byKey(b, dB), nil, nil, nil, 1, policy.RuleLockSignerUnlisted},
		{"keyless lock under a key-A policy", []string{key(a)}, "", pin.Approval{Method: evidence.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer.example", BundleDigest: dA}, nil, nil, nil, 1, policy.RuleLockSignerUnlisted},
		{"tofu lock, unsigned refuse", []string{key(a)}, "", tofu, nil, nil, nil, 1, policy.RuleLockMethodRefused},
		{"tofu lock, unsigned tofu", []string{key(a)}, `,"unsigned":"tofu"`, tofu, nil, nil, nil, 0, ""},
		{"tofu lock, no identity, unsigned tofu", nil, `,"unsigned":"tofu"`, tofu, nil, nil, nil, 0, ""},
		{"manual approval, signed roll-forward, unsigned refuse", []string{key(a)}, "", manual, nil, nil, nil, 1, policy.RuleLockMethodRefused},
		{"manual approval, rollForward manual", []string{key(a)}, `,"rollForward":"manual"`, manual, nil, nil, nil, 0, ""},
		{"manual approval, unsigned tofu", []string{key(a)}, `,"unsigned":"tofu"`, manual, nil, nil, nil, 0, ""},
		{"threshold 2, two signers re-verified", []string{key(a), key(b)}, `,"threshold":2`, pin.Approval{}, nil, thresholdBytes, []string{bA, bB}, 0, ""},
		{"threshold 2, the lock's proof", []string{key(a), key(b)}, `,"threshold":2`, pin.Approval{}, nil, thresholdProven, nil, 0, ""},
		{"threshold 2, one bundle", []string{key(a), key(b)}, `,"threshold":2`, pin.Approval{}, nil, thresholdBytes, []string{bA}, 1, policy.RuleLockUnproven},
		{"threshold 2, no bundle", []string{key(a), key(b)}, `,"threshold":2`, pin.Approval{}, nil, thresholdBytes, nil, 1, policy.RuleLockUnproven},
		{"threshold 2, another first bundle", []string{key(a), key(b)}, `,"threshold":2`, pin.Approval{}, nil, thresholdBytes, []string{bB, bA}, 1, policy.RuleLockUnproven},
		{"threshold 2, the record on other definitions", []string{key(a), key(b)}, `,"threshold":2`, byKey(a, dA), changed, nil, []string{bA, bB}, 1, policy.RuleLockUnproven},
		{"threshold 2, one signer's bundle twice", []string{key(a), key(b)}, `,"threshold":2`, byKey(a, dA), nil, nil, []string{bA, bA}, 1, policy.RuleLockUnproven},
		{"a revoked key first", []string{key(a)}, "", byKey(a, dA), nil, nil, nil, 1, policy.RuleRevoked},
	}
	top := map[string]string{"a revoked key first": fmt.Sprintf(`,"revoked":{"identities":[%q]}`, a.keyID(t))}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := filepath.Join(dir, fmt.Sprint(i))
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(sub, "notes.lock")
			var before []byte
			if tt.lock != nil {
				before = vtWriteBytes(t, lock, tt.lock)
			} else {
				of := snap
				if tt.lockOf != nil {
					of = tt.lockOf
				}
				before = plWriteLock(t, of, tt.approval, lock)
			}
			body := fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"identities":[%s],"lock":"notes.lock"%s}}%s}`,
				strings.Join(tt.ids, ","), tt.extra, top[tt.name])
			pol := vtWrite(t, sub, "policy.json", []byte(body))
			args := []string{"verify-pin", snapPath, "--policy", pol, "--name", "notes", "--fail-on", "never"}
			for _, b := range tt.bundles {
				args = append(args, "--bundle", b)
			}
			code, out, stderr := runCLI(t, args...)
			if code != tt.code || tt.rule != "" && !strings.Contains(out, tt.rule) {
				t.Errorf("exit %d, want %d and %q:\n%s\n%s", code, tt.code, tt.rule, out, stderr)
			}
			if after := mustRead(t, lock); !bytes.Equal(after, before) {
				t.Error("the lock was changed")
			}
			if tt.code == 1 {
				// JSON names the rule too.
				_, js, _ := runCLI(t, append(args, "--format", "json")...)
				if !strings.Contains(js, `"rule": "`+tt.rule+`"`) && !strings.Contains(js, `"rule":"`+tt.rule+`"`) {
					t.Errorf("JSON report lacks the rule %s:\n%s", tt.rule, js)
				}
			}
		})
	}
	if code, _, stderr := runCLI(t, "verify-pin", snapPath, "--lock", thresholdLock, "--bundle", bA); code != 2 || !strings.Contains(stderr, "--bundle and --allow-current-time re-verify a lock under --policy") {
		t.Errorf("--bundle without --policy: exit %d %q", code, stderr)
	}
}

func vtWriteBytes(t *testing.T, path string, data []byte) []byte {
	t.Helper()
	vtWrite(t, filepath.Dir(path), filepath.Base(path), data)
	return data
}

// TestPolicyCheckFilesAndSpellings: policy check reads the files a policy
// names and refuses every spelling mcpsign would never compare equal, with
// the JSON Pointer, exit 2, and the file left as it was.
func TestPolicyCheckFilesAndSpellings(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	k := newPTSigner(t, dir, "k")
	vtWrite(t, dir, "random.pem", []byte("\x13\x37 random bytes \xfe"))
	kid := k.keyID(t)
	hex := strings.TrimPrefix(kid, "sha256:")
	const head = `{"kind":"mcpsign.policy","policyVersion":1,`
	keyOnly := `"servers":{"notes":{"identities":[{"method":"key","key":"k.pub.pem"}]}}`
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"key-only server", keyOnly, 0, "require: nothing more\n"},
		{"missing key file", `"servers":{"notes":{"identities":[{"method":"key","key":"gone.pub.pem"}]}}`, 2, "/servers/notes/identities/0/key: " + filepath.Join(dir, "gone.pub.pem")},
		{"random key file", `"servers":{"notes":{"identities":[{"method":"key","key":"random.pem"}]}}`, 2, "/servers/notes/identities/0/key: " + filepath.Join(dir, "random.pem")},
		{"missing trusted root", `"trust":{"trustedRoot":"gone.json"},` + keyOnly, 2, "/trust/trustedRoot: " + filepath.Join(dir, "gone.json")},
		{"CA roots that are a key", `"trust":{"caRoots":"k.pub.pem"},` + keyOnly, 2, "/trust/caRoots: "},
		{"one key in two PEM encodings", `"servers":{"notes":{"identities":[{"method":"key","key":"k.pub.pem"},{"method":"key","key":"k2.pub.pem"}],"threshold":2}}`, 2, "/servers/notes/identities/1/key: duplicate"},
		{"ex and EX", `"servers":{"ex":{"unsigned":"tofu"},"EX":{"unsigned":"tofu"}}`, 2, `/servers/EX: duplicate: server name "EX" equals "ex"`},
		{"revoked key id upper-case", keyOnly + `,"revoked":{"identities":["sha256:` + strings.ToUpper(hex) + `"]}`, 2, "/revoked/identities/0"},
		{"revoked key id without sha256:", keyOnly + `,"revoked":{"identities":["` + hex + `"]}`, 2, "/revoked/identities/0"},
		{"revoked key id SHA256:", keyOnly + `,"revoked":{"identities":["SHA256:` + hex + `"]}`, 2, "/revoked/identities/0"},
		{"revoked key id leading space", keyOnly + `,"revoked":{"identities":[" ` + kid + `"]}`, 2, "/revoked/identities/0: not in canonical form"},
		{"revoked key id canonical", keyOnly + `,"revoked":{"identities":["` + kid + `"]}`, 0, "identity " + fmt.Sprintf("%q", kid)},
		{"sigstore server", `"servers":{"notes":{"identities":[{"method":"sigstore","issuer":"https://i.example","subject":"a@example.com"}]}}`, 0, "require: nothing more (a sigstore identity always needs its log entry)"},
	}
	// k2.pub.pem: k's key in another PEM encoding (a header line).
	pemText := string(mustRead(t, k.pub))
	vtWrite(t, dir, "k2.pub.pem", []byte(strings.Replace(pemText, "-----\n", "-----\nComment: the same key\n\n", 1)))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := vtWrite(t, dir, "policy.json", []byte(head+tt.body+`}`))
			before := mustRead(t, p)
			code, out, stderr := runCLI(t, "policy", "check", p)
			if code != tt.code || !strings.Contains(out+stderr, tt.want) {
				t.Errorf("exit %d, want %d and %q:\n%s\n%s", code, tt.code, tt.want, out, stderr)
			}
			if !bytes.Equal(mustRead(t, p), before) {
				t.Error("the policy was changed")
			}
		})
	}
}

// demoDir returns the example server and a directory with the demo's
// publisher key and bundle in demo/ (and XDG_STATE_HOME under it).
func demoDir(t *testing.T) (server, dir string) {
	t.Helper()
	server = fixtures.BuildExampleServerNoRace(t)
	dir = t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	if code, _, stderr := runWith(t, map[string]string{envDemoServer: server}, "demo", "--keep", filepath.Join(dir, "demo")); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	return server, dir
}

// TestProxyLockOutsidePolicy: a real proxy session under a policy starts
// only on a lock the policy allows. A lock signed by a key the policy does
// not list, or a tofu lock under "unsigned": "refuse", blocks at start
// (exit 42, the rule named) before the hand-over; the lock is left as it
// is; the lock that passes is the one the proxy is handed.
func TestProxyLockOutsidePolicy(t *testing.T) {
	server, dir := demoDir(t)
	other := newPTSigner(t, dir, "other")
	polOf := func(name, ids, extra string) string {
		return vtWrite(t, dir, name, []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"notes":{"identities":[%s],"bundle":"demo/server.sigstore.json","lock":"notes.lock"%s}}}`, ids, extra)))
	}
	publisher := `{"method":"key","key":"demo/publisher.pub"}`
	keyA := polOf("a.json", publisher, "")
	keyB := polOf("b.json", fmt.Sprintf(`{"method":"key","key":%q}`, other.pub), "")
	tofuOK := polOf("tofu.json", publisher, `,"unsigned":"tofu"`)
	lock := filepath.Join(dir, "notes.lock")
	// The signed lock: pinned under the publisher's key.
	if code, out, stderr := runCLI(t, "pin", "--policy", keyA, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	signed := mustRead(t, lock)
	// The tofu lock of the same server.
	tofuLock := filepath.Join(dir, "tofu.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", tofuLock, "--", server); code != 0 {
		t.Fatalf("pin --tofu: exit %d: %s", code, stderr)
	}
	tofu := mustRead(t, tofuLock)

	for _, tc := range []struct {
		name   string
		policy string
		lock   []byte
		rule   string // "" the session runs
	}{
		{"key A lock, key-A policy", keyA, signed, ""},
		{"key A lock, a policy listing only key B", keyB, signed, policy.RuleLockSignerUnlisted},
		{"tofu lock, unsigned refuse", keyA, tofu, policy.RuleLockMethodRefused},
		{"tofu lock, unsigned tofu", tofuOK, tofu, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, tc.lock)
			if tc.rule != "" {
				code, _, stderr := runCLI(t, "proxy", "--policy", tc.policy, "--name", "notes", "--", server)
				if code != proxycmd.ExitBlocked || !strings.Contains(stderr, "blocked: "+tc.rule) || !strings.Contains(stderr, lock) {
					t.Errorf("exit %d, want %d naming %s and the lock: %s", code, proxycmd.ExitBlocked, tc.rule, stderr)
				}
			} else {
				s := startCLI(t, nil, "proxy", "--policy", tc.policy, "--name", "notes", "--", server)
				cs, _, err := s.client(t)
				if err != nil {
					t.Fatalf("connect: %v\n%s", err, s.stderr.String())
				}
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					t.Errorf("tools/list: %v", err)
				}
				cs.Close()
				if code := s.exit(t); code != 0 {
					t.Errorf("exit %d: %s", code, s.stderr.String())
				}
			}
			if !bytes.Equal(mustRead(t, lock), tc.lock) {
				t.Error("the lock was changed")
			}
		})
	}

	// approve under a policy: refused before the server is listed when the
	// policy approves only signed definitions; under "rollForward":
	// "manual" it writes a manual lock the proxy then starts on.
	vtWriteBytes(t, lock, signed)
	manualOK := polOf("manual.json", publisher, `,"rollForward":"manual"`)
	rug := []string{"--", server, "--mode", fixtures.ModeRugPull}
	approve := []string{"approve", "--name", "notes", "--reason", "reviewed", "--approver", "alice"}
	code, _, stderr := runCLI(t, append(append(append([]string{}, approve...), "--policy", keyA, "--yes", "--expect", "tools=sha256:"+strings.Repeat("0", 64)), rug...)...)
	if code != 1 || !strings.Contains(stderr, "nothing approved: "+policy.RuleLockMethodRefused) || !bytes.Equal(mustRead(t, lock), signed) {
		t.Errorf("approve under a signed-only policy: exit %d %q", code, stderr)
	}
	_, review, _ := runCLI(t, append(append(append([]string{}, approve...), "--policy", manualOK), rug...)...)
	if code, out, stderr := runCLI(t, append(append(append(append([]string{}, approve...), "--policy", manualOK, "--yes"), expects(t, review)...), rug...)...); code != 0 {
		t.Fatalf("approve under rollForward manual: exit %d\n%s\n%s", code, out, stderr)
	}
	if l, err := pin.Read(lock); err != nil || l.Approval.Method != pin.MethodManual {
		t.Fatalf("approved lock: %v", err)
	}
	s := startCLI(t, nil, append([]string{"proxy", "--policy", manualOK, "--name", "notes"}, rug...)...)
	cs, _, err := s.client(t)
	if err != nil {
		t.Fatalf("proxy on the manual lock: %v\n%s", err, s.stderr.String())
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Errorf("proxy on the manual lock: exit %d", code)
	}
	if code, _, stderr := runCLI(t, append([]string{"proxy", "--policy", keyA, "--name", "notes"}, rug...)...); code != proxycmd.ExitBlocked || !strings.Contains(stderr, policy.RuleLockMethodRefused) {
		t.Errorf("proxy on the manual lock under a signed-only policy: exit %d %q", code, stderr)
	}

	// The hand-over: the proxy is told which lock passed, and enforces only
	// that one (proxy.Admission).
	vtWriteBytes(t, lock, signed)
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	var got *proxycmd.Config
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" },
		isTerminal:    func() bool { return false },
		handOverProxy: func(cfg *proxycmd.Config, _ []string) (bool, error) { got = cfg; return true, nil }}
	if code := run(context.Background(), []string{"proxy", "--policy", keyA, "--name", "notes", "--", server}, a); code != 0 {
		t.Fatalf("hand-over: exit %d: %s", code, a.stderr)
	}
	if got.Admission == nil || got.Admission.LockDigest != l.LockDigest || got.Admission.AllowTOFU || got.Admission.AllowManual {
		t.Errorf("admission %+v, want the lock %s, no tofu, no manual", got.Admission, l.LockDigest)
	}
}

// TestProxyAdoptionUnderPolicy: a real session under a policy listing the
// publisher's key, on its signed lock; the server (as the host's user)
// rewrites the lock and changes its tools. Whatever the new lock records (a
// tofu approval, a key the policy does not list, or the listed key over
// definitions its bundle does not sign), it is not adopted: the session is
// blocked (exit 42), no call after the change reaches the server, and the
// file is left as the server wrote it.
func TestProxyAdoptionUnderPolicy(t *testing.T) {
	server, dir := demoDir(t)
	pol := vtWrite(t, dir, "policy.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"}],"bundle":"demo/server.sigstore.json","lock":"notes.lock"}}}`))
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	signed := mustRead(t, lock)
	held, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	rugFile := filepath.Join(dir, "rug.snapshot.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", rugFile, "--", server, "--mode", fixtures.ModeRugPull); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	rug, err := digest.ParseSnapshot(mustRead(t, rugFile))
	if err != nil {
		t.Fatal(err)
	}
	other := newPTSigner(t, dir, "other")
	for _, tc := range []struct {
		name     string
		approval pin.Approval
	}{
		{"a tofu lock", pin.Approval{Method: pin.MethodTOFU}},
		{"a key the policy does not list", pin.Approval{Method: evidence.MethodKey, Identity: other.keyID(t), BundleDigest: "sha256:" + strings.Repeat("1", 64)}},
		{"the listed key over other definitions", held.Approval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, signed)
			calls := filepath.Join(t.TempDir(), "calls.log")
			s := startCLI(t, nil, "proxy", "--policy", pol, "--name", "notes", "--", server, "--mode", fixtures.ModeListChanged, "--calls-log", calls)
			cs, _, err := s.client(t)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			written := plWriteLock(t, rug, tc.approval, lock)
			ctx := context.Background()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil {
				t.Fatalf("first call: %v", err)
			}
			// The server now serves the rug pull; the proxy checks the
			// listing the client asks for, reads the lock on disk, and
			// refuses it.
			if _, err := cs.ListTools(ctx, nil); err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
				t.Fatalf("tools/list after the change: %v, want the block", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "id"}}); err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
				t.Errorf("run_command: %v, want the block", err)
			}
			cs.Close()
			if code := s.exit(t); code != proxycmd.ExitBlocked {
				t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
			}
			if e := s.stderr.String(); !strings.Contains(e, "was changed by another process") || !strings.Contains(e, "it is not adopted") {
				t.Errorf("stderr does not say the changed lock is not adopted:\n%s", e)
			}
			if got := string(mustRead(t, calls)); strings.Contains(got, "run_command") {
				t.Errorf("run_command reached the server: %s", got)
			}
			if !bytes.Equal(mustRead(t, lock), written) {
				t.Error("the lock file was changed by the proxy")
			}
		})
	}
}

// TestProxyThresholdLock: a lock approved by a threshold of two records
// one signer, so a proxy under that policy re-verifies it: at start with
// the bundles given, or, when the only bundle is the one the server
// advertises, at the first listing; a lock it cannot prove blocks
// (policy-lock-unproven), under mode warn too.
func TestProxyThresholdLock(t *testing.T) {
	server, dir := demoDir(t)
	other := newPTSigner(t, dir, "other")
	snapFile := filepath.Join(dir, "server.snapshot.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", snapFile, "--", server); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	snap, err := digest.ParseSnapshot(mustRead(t, snapFile))
	if err != nil {
		t.Fatal(err)
	}
	bOther, _ := other.sign(t, dir, "other.sigstore.json", snap)
	bPub := filepath.Join(dir, "demo", "server.sigstore.json")
	polOf := func(name, extra string) string {
		return vtWrite(t, dir, name, []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"},{"method":"key","key":%q}],"threshold":2,"lock":"notes.lock"%s}}}`, other.pub, extra)))
	}
	two := polOf("two.json", "")
	if code, out, stderr := runCLI(t, "pin", "--policy", two, "--name", "notes", "--bundle", bPub, "--bundle", bOther, "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	lock := filepath.Join(dir, "notes.lock")
	// The lock carries both bundles (its proof): in force with none given.
	s := startCLI(t, nil, "proxy", "--policy", two, "--name", "notes", "--", server)
	cs, _, err := s.client(t)
	if err != nil {
		t.Fatalf("connect, the lock's proof: %v\n%s", err, s.stderr.String())
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Errorf("the lock's proof: exit %d: %s", code, s.stderr.String())
	}
	// Without it, only the bundles named can prove it.
	locked := vtWriteBytes(t, lock, withoutProof(t, mustRead(t, lock)))

	// At start, with both bundles: the session runs.
	s = startCLI(t, nil, "proxy", "--policy", two, "--name", "notes", "--bundle", bPub, "--bundle", bOther, "--", server)
	cs, _, err = s.client(t)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	cs.Close()
	if code := s.exit(t); code != 0 {
		t.Errorf("both bundles: exit %d: %s", code, s.stderr.String())
	}
	// One bundle cannot prove a threshold of two.
	if code, _, stderr := runCLI(t, "proxy", "--policy", two, "--name", "notes", "--bundle", bPub, "--", server); code != proxycmd.ExitBlocked || !strings.Contains(stderr, "blocked: "+policy.RuleLockUnproven) {
		t.Errorf("one bundle: exit %d %q", code, stderr)
	}
	// The server's bundle: proven, or not, at the first listing, in every
	// mode.
	advertised := polOf("advertised.json", `,"bundle":"server","mode":"warn"`)
	s = startCLI(t, nil, "proxy", "--policy", advertised, "--name", "notes", "--", server, "--bundle", bPub)
	if _, _, err := s.client(t); err == nil {
		t.Error("an unproven lock was relayed under mode warn")
	}
	// (at the first listing, by the proxy: not at start)
	if code := s.exit(t); code != proxycmd.ExitBlocked || !strings.Contains(s.stderr.String(), "is not proven: its bundle does not verify its definitions under the policy") ||
		!strings.Contains(s.stderr.String(), policy.RuleLockUnproven) || strings.Contains(s.stderr.String(), "drift relayed") {
		t.Errorf("advertised bundle: exit %d: %s", code, s.stderr.String())
	}
	code, out, _ := runCLI(t, "verify-pin", "--policy", advertised, "--name", "notes", "--fail-on", "never", "--", server, "--bundle", bPub)
	if code != 1 || !strings.Contains(out, policy.RuleLockUnproven) {
		t.Errorf("verify-pin, advertised bundle: exit %d\n%s", code, out)
	}
	if !bytes.Equal(mustRead(t, lock), locked) {
		t.Error("the lock was changed")
	}
}

// TestVerifyPinCertificateLock: a certificate lock records the SAN (or the
// subject) that matched, not the key nor every criterion: under a policy
// that needs more (two criteria, a revoked key ID), verify-pin re-verifies
// its bundle, and refuses it when the bundle's key is revoked.
func TestVerifyPinCertificateLock(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	snapPath, snap := vtSnapshot(t, dir, "snap.json", nil)
	ca := testpki.New(t, testpki.Names{Organization: "Corp", Root: "Corp Root", Intermediate: "Corp Signing"})
	vtWrite(t, dir, "roots.pem", testpki.PEM(ca.Root))
	vtWrite(t, dir, "intermediates.pem", testpki.PEM(ca.Intermediate))
	signer := newPTSigner(t, dir, "release")
	leaf := ca.Issue(t, signer.kp.GetPublicKey(), testpki.CodeSigningLeaf(t, "release", "Corp", "release@corp.example"))
	bundle := signer.signWith(t, dir, "release.sigstore.json", snap, leaf.Raw)
	sum := sha256.Sum256(mustRead(t, bundle))
	lock := filepath.Join(dir, "notes.lock")
	plWriteLock(t, snap, pin.Approval{Method: evidence.MethodCertificate, Identity: "release@corp.example", BundleDigest: "sha256:" + hex.EncodeToString(sum[:])}, lock)
	polOf := func(name, id, extra string) string {
		return vtWrite(t, dir, name, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"caRoots":"roots.pem","caIntermediates":"intermediates.pem"},
		  "servers":{"notes":{"identities":[`+id+`],"lock":"notes.lock"}}`+extra+`}`))
	}
	twoCriteria := `{"method":"certificate","email":"release@corp.example","subject":"CN=release,O=Corp"}`
	for _, tc := range []struct {
		name, policy string
		args         []string
		code         int
		want         string
	}{
		{"two criteria, re-verified", polOf("two.json", twoCriteria, ""), []string{"--bundle", bundle, "--allow-current-time"}, 0, ""},
		{"two criteria, no bundle", polOf("nobundle.json", twoCriteria, ""), nil, 1, policy.RuleLockUnproven},
		{"one criterion", polOf("email.json", `{"method":"certificate","email":"release@corp.example"}`, ""), []string{"--bundle", bundle, "--allow-current-time"}, 0, ""},
		{"one criterion, no bundle", polOf("email1.json", `{"method":"certificate","email":"release@corp.example"}`, ""), nil, 1, policy.RuleLockUnproven},
		{"one criterion, the key revoked", polOf("revoked.json", `{"method":"certificate","email":"release@corp.example"}`, fmt.Sprintf(`,"revoked":{"identities":[%q]}`, signer.keyID(t))),
			[]string{"--bundle", bundle, "--allow-current-time"}, 1, "revoked identity " + fmt.Sprintf("%q", signer.keyID(t))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, append([]string{"verify-pin", snapPath, "--policy", tc.policy, "--name", "notes"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d and %q:\n%s\n%s", code, tc.code, tc.want, out, stderr)
			}
		})
	}
}

// TestProxyHandOverUnderPolicy runs the installed pair under a policy: the
// lock mcpsign checked is handed to mcpsign-proxy (proxy.Admission, through
// the environment), which enforces it; a lock outside the policy never
// reaches mcpsign-proxy.
func TestProxyHandOverUnderPolicy(t *testing.T) {
	mcpsign := fixtures.BuildMcpsign(t)
	server, dir := demoDir(t)
	pol := vtWrite(t, dir, "policy.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"}],"bundle":"demo/server.sigstore.json","lock":"notes.lock"}}}`))
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	p, err := startProxyProcess(t, mcpsign, "proxy", "--policy", pol, "--name", "notes", "--", server)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if runtime.GOOS == "linux" {
		if name := executableName(p.cmd.Process.Pid); name != proxycmd.ExecutableName {
			t.Errorf("the proxy runs as %q, want %q", name, proxycmd.ExecutableName)
		}
	}
	if _, err := p.cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	if code := p.end(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	// A tofu lock in its place: refused by mcpsign, before the hand-over.
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, "--force", "--", server); code != 0 {
		t.Fatalf("pin --tofu: %s", stderr)
	}
	cmd := exec.Command(mcpsign, "proxy", "--policy", pol, "--name", "notes", "--", server)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != proxycmd.ExitBlocked || !strings.Contains(stderr.String(), "blocked: "+policy.RuleLockMethodRefused) {
		t.Errorf("tofu lock: %v: %s", err, stderr.String())
	}
}
