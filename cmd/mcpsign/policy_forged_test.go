package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

// forgeLock writes to path what a process that can write the lock writes:
// the approval of the honest lock (a listed signer's key ID, its bundle
// digest) over other definitions, with a lockDigest recomputed.
func forgeLock(t *testing.T, honest []byte, path string) []byte {
	t.Helper()
	l, err := pin.Parse(honest)
	if err != nil {
		t.Fatal(err)
	}
	snap := l.Snapshot()
	snap.Tools = append(snap.Tools, json.RawMessage(`{"name":"run_command","description":"Run any shell command for the user.","inputSchema":{"type":"object"}}`))
	forged, err := pin.NewLock(snap, l.Approval)
	if err != nil {
		t.Fatal(err)
	}
	data, err := forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pin.Parse(data); err != nil {
		t.Fatalf("the forged lock does not read as a lock: %v", err)
	}
	return vtWriteBytes(t, path, data)
}

// TestForgedLockUnderPolicy: under a policy, a signed lock is in force only
// when a bundle verifies its very definitions and is the bundle it
// records: the record alone (which the server's user can write) approves
// nothing. A forged lock (the listed key over other definitions, its
// lockDigest recomputed) is refused by verify-pin and by a real proxy
// session; the honest lock passes with its bundle, or the one it carries
// (its proof, docs/LOCK.md); with no bundle at all a signed lock is
// unproven, and the message says what to give.
func TestForgedLockUnderPolicy(t *testing.T) {
	server, dir := demoDir(t)
	polOf := func(name, bundle string) string {
		return vtWrite(t, dir, name, []byte(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"}]`+bundle+`,"lock":"notes.lock"}}}`))
	}
	withBundle := polOf("bundle.json", `,"bundle":"demo/server.sigstore.json"`)
	noBundle := polOf("nobundle.json", "")
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "pin", "--policy", withBundle, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	honest := mustRead(t, lock)
	bare := withoutProof(t, honest)
	forgedPath := filepath.Join(dir, "forged.lock")
	forged := forgeLock(t, honest, forgedPath)

	for _, tc := range []struct {
		name   string
		policy string
		lock   []byte
		args   []string // more verify-pin/proxy flags
		rule   string   // "" passes
		hint   string   // in the refusal
	}{
		{"honest lock, the policy's bundle", withBundle, honest, nil, "", ""},
		{"honest lock, --bundle", noBundle, honest, []string{"--bundle", filepath.Join(dir, "demo", "server.sigstore.json")}, "", ""},
		{"forged lock, the policy's bundle", withBundle, forged, nil, policy.RuleLockUnproven, "do not match the signed statement"},
		{"forged lock, --bundle", noBundle, forged, []string{"--bundle", filepath.Join(dir, "demo", "server.sigstore.json")}, policy.RuleLockUnproven, "do not match the signed statement"},
		{"honest lock, its proof only", noBundle, honest, nil, "", ""},
		{"honest lock without its proof, no bundle", noBundle, bare, nil, policy.RuleLockUnproven, "give --bundle"},
		{"forged lock, no bundle", noBundle, forged, nil, policy.RuleLockUnproven, "give --bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, tc.lock)
			code, out, stderr := runCLI(t, append(append([]string{"verify-pin", "--policy", tc.policy, "--name", "notes", "--fail-on", "never"}, tc.args...), "--", server)...)
			want := 0
			if tc.rule != "" {
				want = 1
			}
			if code != want || !strings.Contains(out, tc.rule) || !strings.Contains(out, tc.hint) {
				t.Errorf("verify-pin: exit %d, want %d, %q, %q:\n%s\n%s", code, want, tc.rule, tc.hint, out, stderr)
			}
			if tc.rule != "" {
				code, _, stderr := runCLI(t, append(append([]string{"proxy", "--policy", tc.policy, "--name", "notes"}, tc.args...), "--", server)...)
				if code != proxycmd.ExitBlocked || !strings.Contains(stderr, "blocked: "+tc.rule) || !strings.Contains(stderr, tc.hint) {
					t.Errorf("proxy: exit %d, want %d naming %s: %s", code, proxycmd.ExitBlocked, tc.rule, stderr)
				}
			} else {
				s := startCLI(t, nil, append(append([]string{"proxy", "--policy", tc.policy, "--name", "notes"}, tc.args...), "--", server)...)
				cs, _, err := s.client(t)
				if err != nil {
					t.Fatalf("connect: %v\n%s", err, s.stderr.String())
				}
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					t.Errorf("tools/list: %v", err)
				}
				cs.Close()
				if code := s.exit(t); code != 0 {
					t.Errorf("proxy: exit %d: %s", code, s.stderr.String())
				}
			}
			if got := mustRead(t, lock); string(got) != string(tc.lock) {
				t.Error("the lock was changed")
			}
		})
	}
}

// TestForgedLockServerBundle: with the bundle the server advertises
// ("bundle": "server"), the installed pair proves the lock at the first
// listing through mcpsign-proxy's verifier sub-process (mcpsign
// proxy-verify): the honest lock with the publisher's bundle runs; a lock
// that records the publisher's key while the server advertises a bundle of
// its own key (the server signed what it serves) is blocked before the
// client sees a definition.
func TestForgedLockServerBundle(t *testing.T) {
	mcpsign := fixtures.BuildMcpsign(t)
	server, dir := demoDir(t)
	own := newPTSigner(t, dir, "own")
	pol := vtWrite(t, dir, "policy.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"}],"bundle":"server","lock":"notes.lock"}}}`))
	bPub := filepath.Join(dir, "demo", "server.sigstore.json")
	if code, out, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--", server, "--bundle", bPub); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	lock := filepath.Join(dir, "notes.lock")
	proven := mustRead(t, lock)
	// The bundle the policy names (the server's) proves the lock, with or
	// without the one the lock carries (a row below).
	honest := vtWriteBytes(t, lock, withoutProof(t, proven))
	l, err := pin.Parse(honest)
	if err != nil {
		t.Fatal(err)
	}
	bOwn, _ := own.sign(t, dir, "own.sigstore.json", l.Snapshot())

	for _, tc := range []struct {
		name      string
		lock      []byte
		advertise string
		blocked   bool
	}{
		{"honest lock, the publisher's bundle", honest, bPub, false},
		{"the publisher's key recorded, the server's own bundle", honest, bOwn, true},
		// The bundle the policy names decides, not the one the lock carries.
		{"the lock's proof, the server's own bundle", proven, bOwn, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, tc.lock)
			p, err := startProxyProcess(t, mcpsign, "proxy", "--policy", pol, "--name", "notes", "--", server, "--bundle", tc.advertise)
			if !tc.blocked {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				if _, err := p.cs.ListTools(context.Background(), nil); err != nil {
					t.Errorf("tools/list: %v", err)
				}
				if code := p.end(t); code != 0 {
					t.Errorf("exit %d: %s", code, p.stderr.String())
				}
				return
			}
			if err == nil {
				if res, lerr := p.cs.ListTools(context.Background(), nil); lerr == nil {
					t.Errorf("the forged lock was relayed: %d tools", len(res.Tools))
				}
			}
			if code := p.end(t); code != proxycmd.ExitBlocked || !strings.Contains(p.stderr.String(), policy.RuleLockUnproven) {
				t.Errorf("exit %d, want %d naming %s: %s", code, proxycmd.ExitBlocked, policy.RuleLockUnproven, p.stderr.String())
			}
			if got := mustRead(t, lock); string(got) != string(tc.lock) {
				t.Error("the lock was changed")
			}
		})
	}
}

// TestForgedLockKeyless: the same under a keyless policy, against the
// local Sigstore stack: the signer's lock passes with its bundle, or the
// one it carries (its proof); the same record over other definitions, or
// with no bundle at all, is policy-lock-unproven.
func TestForgedLockKeyless(t *testing.T) {
	env := sigstack.Require(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	email := "forged@example.com"
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(env.FreshToken(t, email)), 0o600); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "k.sigstore.json")
	if code, _, stderr := runCLI(t, "sign", "--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot,
		"--identity-token", token, "-o", bundle, "--", server); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	polOf := func(name, extra string) string {
		return vtWrite(t, dir, name, []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":%q},
		  "servers":{"notes":{"identities":[{"method":"sigstore","issuer":%q,"subject":%q}],"lock":"notes.lock"%s}}}`, env.TrustedRoot, env.OIDCIssuer, email, extra)))
	}
	withBundle, noBundle := polOf("bundle.json", fmt.Sprintf(`,"bundle":%q`, bundle)), polOf("nobundle.json", "")
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "pin", "--policy", withBundle, "--name", "notes", "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	honest := mustRead(t, lock)
	if l, err := pin.Parse(honest); err != nil || l.Approval.Method != evidence.MethodSigstore || l.Approval.Identity != email {
		t.Fatalf("the pinned lock: %v %+v", err, l)
	}
	forged := forgeLock(t, honest, filepath.Join(dir, "forged.lock"))
	for _, tc := range []struct {
		name, policy string
		lock         []byte
		code         int
	}{
		{"honest lock, its bundle", withBundle, honest, 0},
		{"forged lock, the bundle", withBundle, forged, 1},
		{"honest lock, its proof only", noBundle, honest, 0},
		{"honest lock without its proof, no bundle", noBundle, withoutProof(t, honest), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, tc.lock)
			code, out, stderr := runCLI(t, "verify-pin", "--policy", tc.policy, "--name", "notes", "--fail-on", "never", "--", server)
			if code != tc.code || tc.code == 1 && !strings.Contains(out, policy.RuleLockUnproven) {
				t.Errorf("verify-pin: exit %d, want %d:\n%s\n%s", code, tc.code, out, stderr)
			}
		})
	}
}
