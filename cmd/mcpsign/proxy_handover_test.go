package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/pin"
)

// proxyProcess is 'mcpsign proxy' run as a host runs it: a process of its
// own, with a go-sdk client on its stdio.
type proxyProcess struct {
	cmd    *exec.Cmd
	stderr *fixtures.SyncBuffer
	cs     *mcp.ClientSession
}

// startProxyProcess runs argv and connects a client; err is the connect
// error (a blocked session fails its initialize).
func startProxyProcess(t *testing.T, argv ...string) (*proxyProcess, error) {
	t.Helper()
	return startProxyProcessEnv(t, nil, argv...)
}

// startProxyProcessEnv is startProxyProcess with env ("NAME=value") added
// to the process's environment.
func startProxyProcessEnv(t *testing.T, env []string, argv ...string) (*proxyProcess, error) {
	t.Helper()
	p := &proxyProcess{cmd: exec.Command(argv[0], argv[1:]...), stderr: &fixtures.SyncBuffer{}}
	p.cmd.Stderr = p.stderr
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "handover-test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Second}, nil)
	t.Cleanup(func() {
		if p.cmd.Process != nil && p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", filepath.Base(argv[0]), p.stderr.String())
		}
	})
	p.cs = cs
	return p, err
}

// end closes the client's side and returns the exit code.
func (p *proxyProcess) end(t *testing.T) int {
	t.Helper()
	if p.cs != nil {
		p.cs.Close() // closes stdin, waits for the process
	} else {
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the proxy did not end")
		}
	}
	if p.cmd.ProcessState == nil {
		t.Fatal("the proxy has not exited")
	}
	return p.cmd.ProcessState.ExitCode()
}

// sessionToolNames lists the tools a client session holds, sorted.
func sessionToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// executableName returns the base name of the file pid runs ("" where /proc
// is not there).
func executableName(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return filepath.Base(exe)
}

// childEnviron returns the environment of pid's child process (Linux).
func childEnviron(t *testing.T, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", n))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(string(env), "\x00")
		}
	}
	t.Fatalf("no child of %d", pid)
	return nil
}

// TestProxyHandOver runs the installed pair, mcpsign and mcpsign-proxy, as
// a host does: 'mcpsign proxy' becomes mcpsign-proxy (same process), which
// verifies through 'mcpsign proxy-verify' on signed first use and on a
// signed update, and blocks a rug pull the bundle does not cover before any
// call reaches the server. Without mcpsign-proxy beside it, mcpsign runs the
// proxy itself.
func TestProxyHandOver(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	// The publisher's bundles of the server's honest and rug-pull
	// definitions: the shared ones, alice's (signing is not this test's
	// subject, and costs seconds of key derivation under -race).
	d := discoverySetup(t)
	bundle := filepath.Join(dir, "server.sigstore.json")
	sign := func(mode string) {
		t.Helper()
		signed := map[string]string{fixtures.ModeHonest: d.honest, fixtures.ModeRugPull: d.rugpull}[mode]
		vtWriteBytes(t, bundle, mustRead(t, signed))
	}
	lock := filepath.Join(dir, "mcp.lock")
	calls := filepath.Join(dir, "calls.log")
	proxyArgv := func(exe, mode string) []string {
		return []string{exe, "proxy", "--lock", lock, "--bundle", bundle, "--key", d.alice.pub, "--", server, "--mode", mode, "--calls-log", calls}
	}
	onLinux := runtime.GOOS == "linux"

	t.Run("signed first use", func(t *testing.T) {
		sign(fixtures.ModeHonest)
		p, err := startProxyProcess(t, proxyArgv(mcpsign, fixtures.ModeHonest)...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if onLinux {
			if name := executableName(p.cmd.Process.Pid); name != proxycmd.ExecutableName {
				t.Errorf("the proxy runs as %q, want %q", name, proxycmd.ExecutableName)
			}
			for _, kv := range childEnviron(t, p.cmd.Process.Pid) {
				if strings.HasPrefix(kv, proxycmd.EnvConfig+"=") {
					t.Errorf("the server inherited %s", proxycmd.EnvConfig)
				}
			}
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.HonestToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		l, err := pin.Read(lock)
		if err != nil || l.Approval.Method != evidence.MethodKey || !strings.HasPrefix(l.Approval.BundleDigest, "sha256:") {
			t.Fatalf("lock: %v %+v", err, l)
		}
		if !strings.Contains(p.stderr.String(), "signed first use: verified") {
			t.Errorf("stderr does not report the signed first use:\n%s", p.stderr.String())
		}
	})

	t.Run("rug pull the bundle does not cover", func(t *testing.T) {
		before, err := os.ReadFile(lock)
		if err != nil {
			t.Fatal(err)
		}
		p, err := startProxyProcess(t, proxyArgv(mcpsign, fixtures.ModeRugPull)...)
		if err == nil {
			_, err = p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}})
		}
		if err == nil || !strings.Contains(err.Error(), "blocked by mcpsign") {
			t.Fatalf("the rug pull was not blocked: %v", err)
		}
		if code := p.end(t); code != proxycmd.ExitBlocked {
			t.Errorf("exit %d, want %d", code, proxycmd.ExitBlocked)
		}
		for _, want := range []string{"verification failed at step match", "run_command"} {
			if !strings.Contains(p.stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
			}
		}
		if data, err := os.ReadFile(calls); err == nil && strings.Contains(string(data), "tools/call") {
			t.Errorf("a call reached the server:\n%s", data)
		}
		if after, _ := os.ReadFile(lock); !bytes.Equal(before, after) {
			t.Error("the lock changed")
		}
	})

	t.Run("signed update", func(t *testing.T) {
		sign(fixtures.ModeRugPull)
		p, err := startProxyProcess(t, proxyArgv(mcpsign, fixtures.ModeRugPull)...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if got := sessionToolNames(t, p.cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
			t.Errorf("tools %q", got)
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		l, err := pin.Read(lock)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(l.Definitions, func(d pin.Definition) bool { return d.Key == "run_command" }) {
			t.Error("the lock was not rolled forward")
		}
		// The signed change is shown, with the capability it brings.
		for _, want := range []string{"rolled forward", `tool "run_command" is not in the lock`, `new tool "run_command" has exec`} {
			if !strings.Contains(p.stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
			}
		}
	})

	t.Run("mcpsign-proxy by hand", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(filepath.Dir(mcpsign), proxycmd.ExecutableName), "--lock", lock, "--", server)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != proxycmd.ExitError || !strings.Contains(string(out), "started by 'mcpsign proxy'") {
			t.Errorf("err %v, output %q", err, out)
		}
	})

	t.Run("mcpsign alone", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "mcpsign")
		if err := os.Link(mcpsign, alone); err != nil {
			t.Skipf("linking the executable: %v", err)
		}
		p, err := startProxyProcess(t, proxyArgv(alone, fixtures.ModeRugPull)...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if onLinux {
			if name := executableName(p.cmd.Process.Pid); name != "mcpsign" {
				t.Errorf("the proxy runs as %q, want mcpsign itself", name)
			}
		}
		if code := p.end(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})
}

// TestProxyHandOverKeyless passes the keyless verify flags (identity,
// issuer, an anchored identity regexp, the trusted root, the timestamp
// policy) through the hand-over to 'mcpsign proxy-verify', against the
// local Sigstore stack: the recorded signer first uses; anyone else is
// blocked before a lock is written.
func TestProxyHandOverKeyless(t *testing.T) {
	env := sigstack.Require(t)
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	email := "handover@example.com"
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(env.FreshToken(t, email)), 0o600); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "k.sigstore.json")
	if code, _, stderr := runCLI(t, "sign", "--signing-config", env.SigningConfig, "--trusted-root", env.TrustedRoot,
		"--identity-token", token, "-o", bundle, "--", server); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	tests := []struct {
		name     string
		identity []string
		wantCode int
	}{
		{"the signer", []string{"--certificate-identity", email}, 0},
		{"the signer, by an anchored regexp", []string{"--certificate-identity-regexp", `^handover@example\.com$`}, 0},
		{"anyone else", []string{"--certificate-identity", "mallory@example.com"}, proxycmd.ExitBlocked},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lock := filepath.Join(dir, fmt.Sprintf("%d.lock", i))
			argv := append([]string{mcpsign, "proxy", "--lock", lock, "--bundle", bundle, "--trusted-root", env.TrustedRoot,
				"--certificate-oidc-issuer", env.OIDCIssuer, "--require-timestamp"}, tc.identity...)
			p, err := startProxyProcess(t, append(argv, "--", server)...)
			if (err == nil) != (tc.wantCode == 0) {
				t.Fatalf("connect: %v", err)
			}
			if code := p.end(t); code != tc.wantCode {
				t.Fatalf("exit %d, want %d", code, tc.wantCode)
			}
			l, err := pin.Read(lock)
			if tc.wantCode != 0 {
				if err == nil {
					t.Error("a lock was written")
				}
				if !strings.Contains(p.stderr.String(), "mallory@example.com") {
					t.Errorf("the report does not name the expected identity:\n%s", p.stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := l.Approval; a.Method != evidence.MethodSigstore || a.Identity != email || a.Issuer != env.OIDCIssuer || a.Tlog == nil {
				t.Errorf("approval %+v", a)
			}
		})
	}
}
