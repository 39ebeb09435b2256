//go:build unix

package proxycmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

const stdioHelperEnv = "MCPSIGN_TEST_POLLABLE_STDIO"

// runStdioHelper runs the pollable-stdio helper when the test binary was
// executed as it (TestMain).
func runStdioHelper() bool {
	if os.Getenv(stdioHelperEnv) != "1" {
		return false
	}
	stdioHelper()
	return true
}

// nonblocking reports whether fd is in non-blocking mode.
func nonblocking(fd int) bool {
	fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	return e == 0 && fl&syscall.O_NONBLOCK != 0
}

// stdioHelper runs in a child process: it reports, on stderr, what
// PollableStdio did with its stdin and stdout, and their modes after
// restore.
func stdioHelper() {
	in, out, restore := PollableStdio()
	during := fmt.Sprintf("in:%v/%v out:%v/%v", in != os.Stdin, nonblocking(0), out != os.Stdout, nonblocking(1))
	restore()
	fmt.Fprintf(os.Stderr, "%s after:%v/%v\n", during, nonblocking(0), nonblocking(1))
	os.Exit(0)
}

// TestPollableStdio checks, in child processes, which standard streams are
// made pollable: pipes of their own are, and are put back in blocking mode
// by restore; a stream that shares its file with another one is not.
func TestPollableStdio(t *testing.T) {
	tests := []struct {
		name  string
		setup func(cmd *exec.Cmd) (cleanup func())
		want  string
	}{
		{"pipes of their own", func(cmd *exec.Cmd) func() {
			cmd.Stdin = strings.NewReader("")
			cmd.Stdout = &bytes.Buffer{}
			return func() {}
		}, "in:true/true out:true/true after:false/false"},
		{"stdout shared with stderr", func(cmd *exec.Cmd) func() {
			cmd.Stdin = strings.NewReader("")
			return nil // stdout = stderr, set below
		}, "in:true/true out:false/false after:false/false"},
		{"files", func(cmd *exec.Cmd) func() {
			f, err := os.CreateTemp(t.TempDir(), "in")
			if err != nil {
				t.Fatal(err)
			}
			g, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdin, cmd.Stdout = f, g
			return func() { f.Close(); g.Close() }
		}, "in:false/false out:false/false after:false/false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), stdioHelperEnv+"=1")
			var stderr bytes.Buffer
			cleanup := tc.setup(cmd)
			if cleanup == nil {
				// One pipe for stdout and stderr, as 2>&1 makes.
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stdout, cmd.Stderr = w, w
				err = cmd.Start()
				w.Close()
				if err != nil {
					t.Fatal(err)
				}
				stderr.ReadFrom(r)
				r.Close()
				cmd.Wait()
			} else {
				defer cleanup()
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v: %s", err, stderr.String())
				}
			}
			if got := strings.TrimSpace(stderr.String()); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
