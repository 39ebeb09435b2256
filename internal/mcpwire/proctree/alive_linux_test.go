package proctree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAlive: a group is alive while a live process is in it, its leader
// gone or not; a group of a zombie only, or of nobody, is not.
func TestAlive(t *testing.T) {
	// waitState polls the process's state in /proc until want ('Z'), or
	// until it is gone (0).
	waitState := func(t *testing.T, pid int, want byte) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a hang bound
		for {
			st, ok := readStat(pid)
			if want == 0 && !ok || ok && st.state == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d: state %q, want %q", pid, st.state, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (pgid int) // the group, cleaned up by the row
		want  bool
	}{
		{name: "leader alive", want: true, start: func(t *testing.T) int {
			cmd := exec.Command("sleep", "30")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return cmd.Process.Pid
		}},
		// The leader exited and was reaped; its child lives on in the
		// group: kill(pgid, 0), not kill(-pgid, 0), would find nobody.
		{name: "leader gone, a member alive", want: true, start: func(t *testing.T) int {
			cmd := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			member, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			waitState(t, pgid, 0)
			t.Cleanup(func() {
				syscall.Kill(-pgid, syscall.SIGKILL)
				var ws syscall.WaitStatus
				syscall.Wait4(member, &ws, syscall.WNOHANG, nil) // when re-parented to this process
			})
			return pgid
		}},
		{name: "a zombie only", want: false, start: func(t *testing.T) int {
			cmd := exec.Command("true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Wait() })
			waitState(t, cmd.Process.Pid, 'Z')
			return cmd.Process.Pid
		}},
		{name: "nobody", want: false, start: func(t *testing.T) int {
			cmd := exec.Command("true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			return cmd.Process.Pid
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Alive(tc.start(t)); got != tc.want {
				t.Errorf("Alive = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStartClosesPipesOnFailure: a server that cannot start leaves no pipe
// open.
func TestStartClosesPipesOnFailure(t *testing.T) {
	count := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds)
	}
	before := count()
	const tries = 10
	for range tries {
		if _, err := Start([]string{filepath.Join(t.TempDir(), "no-such-server")}, nil, ""); err == nil {
			t.Fatal("a missing command started")
		}
	}
	// Six pipe ends a try would leak; other tests' files may come and go.
	if after := count(); after-before >= tries {
		t.Errorf("%d files open after %d failed starts, %d before", after, tries, before)
	}
}

// TestReadProcBound: readProc reads a file whole below 1 MiB, and refuses
// one that fills its buffer at the bound.
func TestReadProcBound(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{
		{"small", 100, true},
		{"just under 1 MiB", 1<<20 - 1, true},
		{"2 MiB", 2 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			data := []byte(strings.Repeat("x", tc.size))
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readProc(p)
			if tc.ok != (err == nil) || tc.ok && string(got) != string(data) {
				t.Errorf("readProc: %d bytes, %v; want ok %v", len(got), err, tc.ok)
			}
		})
	}
}
