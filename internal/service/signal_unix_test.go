//go:build unix

package service

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMDrains: a process running Run as the CLI does gets SIGTERM
// while a slow request is in flight: the request is answered, the process
// logs "drained" and exits 0, and its port refuses connections.
func TestSIGTERMDrains(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPSIGN_SERVICE_CHILD=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan map[string]any, 100)
	var all strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	waitLine := func(msg string) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the service ended before logging %q", msg)
				}
				if l["msg"] == msg {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q logged in 10 s", msg)
			}
		}
	}
	addr, _ := waitLine("listening")["address"].(string)
	type answer struct {
		code int
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{resp.StatusCode, string(b), err}
	}()
	waitLine("slow request in handler")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	draining := waitLine("draining")
	if c := draining["cause"]; c != "interrupted: SIGTERM received" {
		t.Errorf("draining cause %v", c)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted while draining")
	}
	if a := <-got; a.err != nil || a.code != 200 || a.body != "finished" {
		t.Errorf("the request in flight: %+v, want 200 finished", a)
	}
	waitLine("drained")
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after a clean drain, want 0; log:\n%s", code, all.String())
	}
}
