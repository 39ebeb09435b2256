package pin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
)

// The helper process of the crash and concurrency tests. It does nothing
// unless MCPSIGN_PIN_HELPER is set:
//
//   - "loop PATH": write two different locks to PATH alternately, forever,
//     printing "wrote" after each write;
//   - "update PATH N": N times, under Update, read the lock at PATH and write
//     it back with approvedAt one second later.
func TestHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv("MCPSIGN_PIN_HELPER"))
	if len(args) == 0 {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	switch args[0] {
	case "loop":
		locks := []*Lock{bigLock(t, "a"), bigLock(t, "b")}
		out := bufio.NewWriter(os.Stdout)
		for i := 0; ; i++ {
			if err := locks[i%2].Write(ctx, args[1]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Fprintln(out, "wrote")
			out.Flush()
		}
	case "update":
		n, _ := strconv.Atoi(args[2])
		for range n {
			err := Update(ctx, args[1], func(cur *Lock) (*Lock, error) {
				if cur == nil {
					return nil, fmt.Errorf("no lock")
				}
				cur.Approval.ApprovedAt = cur.Approval.ApprovedAt.Add(time.Second)
				return cur, nil
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		os.Exit(0)
	}
	t.Fatalf("unknown helper command %q", args)
}

// bigLock is a tofu lock of about 512 KiB (so that a kill often lands in the
// middle of a write), whose descriptions all say variant.
func bigLock(t testing.TB, variant string) *Lock {
	t.Helper()
	s := &digest.Snapshot{Server: digest.ServerInfo{Name: "big", Version: variant}, Prompts: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}}
	desc := strings.Repeat(variant, 64<<10)
	for i := range 8 {
		s.Tools = append(s.Tools, json.RawMessage(fmt.Sprintf(`{"name":"tool_%02d","description":%q,"inputSchema":{"type":"object"}}`, i, desc)))
	}
	l, err := NewLock(s, Approval{Method: MethodTOFU, ApprovedAt: time.Unix(1767225600, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Marshal(); err != nil {
		t.Fatal(err)
	}
	return l
}

func helper(t *testing.T, command string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCPSIGN_PIN_HELPER="+command)
	cmd.Stderr = os.Stderr
	return cmd
}

// A process killed (SIGKILL) while it writes the lock leaves the previous
// lock whole: Read succeeds and gives one of the two complete versions.
func TestKilledWriterLeavesLockWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	path := filepath.Join(t.TempDir(), "mcp.lock.json")
	want := map[string]string{bigLock(t, "a").LockDigest: "a", bigLock(t, "b").LockDigest: "b"}
	seen := map[string]int{}
	for round := range 8 {
		cmd := helper(t, "loop "+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for a first complete write, then kill at a random moment.
		r := bufio.NewReader(stdout)
		if _, err := r.ReadString('\n'); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the writer wrote nothing: %v", round, err)
		}
		time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		l, err := Read(path)
		if err != nil {
			t.Fatalf("round %d: after SIGKILL the lock does not read: %v", round, err)
		}
		v, ok := want[l.LockDigest]
		if !ok {
			t.Fatalf("round %d: the lock is neither complete version (lockDigest %s)", round, l.LockDigest)
		}
		seen[v]++
	}
	// Temporary files of killed writers may be left; the lock is not.
	t.Logf("versions read after kills: %v", seen)
}

// Concurrent writers on one lock serialize on its file lock: 4 processes
// each doing 25 read-modify-write updates lose none of the 100.
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	path := filepath.Join(t.TempDir(), "mcp.lock.json")
	base := tofuLock(t, "honest")
	if err := base.Write(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	const procs, each = 4, 25
	var cmds []*exec.Cmd
	for range procs {
		cmd := helper(t, fmt.Sprintf("update %s %d", path, each))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer: %v", err)
		}
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Approval.ApprovedAt.Sub(base.Approval.ApprovedAt); d != procs*each*time.Second {
		t.Errorf("approvedAt advanced %v, want %v: updates were lost", d, procs*each*time.Second)
	}
}
