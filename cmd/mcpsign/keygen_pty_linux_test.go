package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the controller and the terminal of a new pseudo-terminal.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(ctl.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close(); ctl.Close() })
	return ctl, tty
}

// echoOff waits up to limit, or until stop is closed, for the terminal's
// echo to be off, and reports whether it is.
func echoOff(tty *os.File, limit time.Duration, stop <-chan struct{}) bool {
	deadline := time.Now().Add(limit)
	for {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err == nil && tio.Lflag&unix.ECHO == 0 {
			return true
		}
		if err != nil || time.Now().After(deadline) {
			return false
		}
		select {
		case <-stop:
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// runAtTerminal runs mcpsign with stdin on a real terminal and types lines
// into it, one after each prompt it sees on stderr. It returns the exit
// code, stderr, and everything the terminal echoed.
func runAtTerminal(t *testing.T, lines []string, args ...string) (int, string, string) {
	t.Helper()
	ctl, tty := openPTY(t)
	var echoed bytes.Buffer
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 1024)
		for {
			n, err := ctl.Read(buf)
			mu.Lock()
			echoed.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	stderr := &promptWriter{prompts: make(chan struct{}, 8)}
	// The typist ends before runAtTerminal returns (stop, then Wait): it
	// reads the terminal's state, and the test's cleanup closes the
	// terminal (a data race under -race once 'sign key' answered faster than
	// the race detector's history forgets).
	stop := make(chan struct{})
	var typist sync.WaitGroup
	typist.Go(func() {
		for _, l := range lines {
			select {
			case <-stderr.prompts:
			case <-stop:
				return
			case <-time.After(30 * time.Second):
				return
			}
			// Type once ReadPassword has turned echo off.
			if !echoOff(tty, 10*time.Second, stop) {
				return
			}
			io.WriteString(ctl, l+"\r")
		}
	})
	a := &app{
		stdin: tty, stdout: io.Discard, stderr: stderr,
		getenv:     func(string) string { return "" },
		isTerminal: func() bool { return true },
	}
	code := run(context.Background(), args, a)
	close(stop)
	typist.Wait()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	return code, stderr.String(), echoed.String()
}

// promptWriter is stderr that signals each password prompt.
type promptWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	prompts chan struct{}
}

func (w *promptWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("assword")) {
		w.prompts <- struct{}{}
	}
	return w.b.Write(p)
}

func (w *promptWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestPasswordPromptAtTerminal(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	dir := t.TempDir()
	snap, _ := exampleSnapshot(t, dir)
	const pw = "typed at the terminal"
	prefix := filepath.Join(dir, "tty")

	code, stderr, echoed := runAtTerminal(t, []string{pw, pw}, "keygen", "-o", prefix, "--algorithm", "ed25519")
	if code != 0 {
		t.Fatalf("keygen at a terminal: exit %d %s", code, stderr)
	}
	if !strings.Contains(stderr, "Password for the new key:") || !strings.Contains(stderr, "Password again:") {
		t.Errorf("prompts: %q", stderr)
	}
	if strings.Contains(echoed+stderr, pw) {
		t.Error("the password was echoed")
	}

	code, stderr, _ = runAtTerminal(t, []string{pw, pw + "!"}, "keygen", "-o", filepath.Join(dir, "mismatch"))
	if code != 2 || !strings.Contains(stderr, "do not match") {
		t.Errorf("mismatch: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "mismatch.key")); err == nil {
		t.Error("key written after a mismatch")
	}

	// The key keygen wrote is encrypted with the password as typed (no
	// line end): mcpsign without -race opens it (fixtures, runSetup).
	if code, _, stderr := runSetup(t, map[string]string{"PW": pw}, "sign", "key", "--key", prefix+".key", "--password-env", "PW", snap, "-o", filepath.Join(dir, "a.json")); code != 0 {
		t.Errorf("the key keygen wrote at a terminal does not open with the typed password: exit %d %s", code, stderr)
	}

	// The prompt of 'sign key' for a key that exists: a setup key with the
	// same password (the subject is the prompt; keygen's key would take
	// 600,000 PBKDF2 iterations in this race-instrumented process for each).
	signer := setupKey(t, dir, "signer", pw)
	out := filepath.Join(dir, "b.json")
	code, stderr, echoed = runAtTerminal(t, []string{pw}, "sign", "key", "--key", signer.key, snap, "-o", out)
	if code != 0 {
		t.Fatalf("sign at a terminal: exit %d %s", code, stderr)
	}
	if strings.Contains(echoed+stderr, pw) {
		t.Error("the password was echoed")
	}
	code, stderr, _ = runAtTerminal(t, []string{"wrong " + pw}, "sign", "key", "--key", signer.key, snap, "-o", filepath.Join(dir, "c.json"))
	if code != 2 || !strings.Contains(stderr, "wrong password") {
		t.Errorf("wrong password at a terminal: exit %d %s", code, stderr)
	}
}

// TestTerminalCheck: /dev/null is a character device but not a terminal;
// CI with stdin from /dev/null gets the clear "pass --password-env" message,
// not a prompt that fails with "inappropriate ioctl for device".
func TestTerminalCheck(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	_, tty := openPTY(t)
	if isTerminalFile(devnull) {
		t.Error("/dev/null counts as a terminal")
	}
	if !isTerminalFile(tty) {
		t.Error("a pseudo-terminal does not count as a terminal")
	}
	var errb bytes.Buffer
	a := &app{
		stdin: devnull, stdout: io.Discard, stderr: &errb,
		getenv:     func(string) string { return "" },
		isTerminal: func() bool { return isTerminalFile(devnull) },
	}
	code := run(context.Background(), []string{"keygen", "-o", filepath.Join(t.TempDir(), "k")}, a)
	if code != 2 || !strings.Contains(errb.String(), "--password-env") || strings.Contains(errb.String(), "ioctl") {
		t.Errorf("keygen with stdin from /dev/null: exit %d %q", code, errb.String())
	}
}
