package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testShFuncs is scripts/test.sh from its helpers to its trap on EXIT:
// what a run does around its steps (progress, Ctrl-C, clean-up).
func testShFuncs(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, "\nT_RUN="), strings.Index(s, "\ntrap cleanup EXIT\n")
	if i < 0 || j < i {
		t.Fatal("scripts/test.sh has no helpers from T_RUN= to trap cleanup EXIT")
	}
	return s[i : j+len("\ntrap cleanup EXIT\n")]
}

// TestTestShInterrupted runs scripts/test.sh's own helpers as a run does:
// a long step says every second (MCPSIGN_TEST_PROGRESS_EVERY=1) what it
// waits for and for how long; then Ctrl-C (SIGINT to the process group, as
// a terminal sends it) while go test runs in its own process group: the
// run says it was interrupted, counts the running test as not finished
// (not failed: "INTERRUPTED"), says it cleans up, stops the test's process
// group, and exits 130 within seconds.
func TestTestShInterrupted(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	t.Parallel()
	dir := t.TempDir()
	ts := filepath.Join(dir, "testsummary")
	if out, err := exec.Command("go", "build", "-o", ts, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := "set -euo pipefail\n" + testShFuncs(t) + `
summary=("$TMP/testsummary" -slowest 0)
cp "$TESTSUMMARY" "$TMP/testsummary"
step "a long step"
run "sleeping" sleep 2.5
step "go test"
setsid bash -c 'echo "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}"; exec sleep 60' >"$TMP/first.json" 2>&1 &
FIRST_PID=$!
# Ready once the test's first line is written: on a loaded machine it may
# not be 200 ms after the start, and the test then ran as not started.
until grep -q TestA "$TMP/first.json" 2>/dev/null; do sleep 0.01; done
echo "READY $FIRST_PID"
watch "$FIRST_PID" "go test" tests_done "$TMP/first.json" 3
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "TESTSUMMARY="+ts, "MCPSIGN_TEST_PROGRESS_EVERY=1", "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(io.TeeReader(stdout, &out))
	testPG := 0
	for testPG == 0 {
		line, err := r.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("no READY line: %v\n%s%s", err, out.String(), errOut.String())
		}
		if rest, ok := strings.CutPrefix(line, "READY "); ok {
			testPG, _ = strconv.Atoi(strings.TrimSpace(rest))
		}
	}
	// The interrupt while watch waits (its 1 s sleep), not as it starts:
	// sent at once after READY, one run in dozens went on for the 60 s.
	// Likely cause: a SIGINT that reaches a foreground child forked a
	// moment ago, before it reset the shell's handlers, leaves it alive,
	// and bash then drops the SIGINT (bash(1), "SIGNALS": the command did
	// not die of it). A person's Ctrl-C at that instant needs a second.
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped %v after the interrupt", d)
	}
	got := out.String() + errOut.String()
	for _, want := range []string{
		"=== a long step (", "=== go test (", "the step before took ",
		"=== interrupted (", "\nDid not finish, stopped by the interrupt (1):\n  p TestA\n",
		"\nINTERRUPTED: 0 passed, 0 failed, 0 skipped, 1 did not finish", "=== cleaning up: removing ", "the run was interrupted: no result",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// Two progress lines, whichever seconds they name: on a loaded
	// machine the 1 s poll may wake at 2 s and skip "1s" (bash's SECONDS
	// counts whole seconds of the clock). Without the progress every
	// second the 2.5 s step has none.
	if n := strings.Count(got, "  ... sleeping: "); n < 2 {
		t.Errorf("%d progress lines of the 2.5 s step, want at least 2:\n%s", n, got)
	}
	if strings.Contains(got, "Failed (") || strings.Contains(got, "1 failed") {
		t.Errorf("the interrupted test was reported as a failure:\n%s", got)
	}
	if err := syscall.Kill(-testPG, 0); err == nil {
		syscall.Kill(-testPG, syscall.SIGKILL)
		t.Error("the test's process group outlived the run")
	}
}

// TestPortsLoopbackOnly: scripts/sigstore-local/ports.sh takes the first
// free port from a given one, never one something listens on nor one it
// took before, and loopback_only fails, naming the address, for a process
// that listens beyond 127.0.0.1.
func TestPortsLoopbackOnly(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("no ss")
	}
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	p := busy.Addr().(*net.TCPAddr).Port
	ports := filepath.Join("..", "sigstore-local", "ports.sh")
	out, err := exec.Command("bash", "-c", `source "$1"; take_port A "$2"; take_port B "$2"; echo "$A $B"`, "bash", ports, strconv.Itoa(p)).CombinedOutput()
	if err != nil {
		t.Fatalf("take_port: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] == strconv.Itoa(p) || f[1] == strconv.Itoa(p) || f[0] == f[1] {
		t.Errorf("take_port from the busy port %d gave %q: want two other, distinct ports", p, out)
	}

	check := func(addr string) (string, error) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out, err := exec.Command("bash", "-c", `source "$1"; loopback_only "$2"`, "bash", ports, strconv.Itoa(os.Getpid())).CombinedOutput()
		return string(out), err
	}
	if out, err := check("127.0.0.1:0"); err != nil {
		t.Errorf("a loopback listener refused: %v %s", err, out)
	}
	if out, err := check("0.0.0.0:0"); err == nil || !strings.Contains(out, "listens beyond 127.0.0.1: ") {
		t.Errorf("a listener on every interface passed: %v %s", err, out)
	}
}
