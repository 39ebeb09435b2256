package proctree

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixtureEnv selects what the test binary does when re-executed as a
// fixture (see runFixture).
const fixtureEnv = "PROCTREE_FIXTURE"

// noRaceSleep keeps a fixture built with -race from sleeping a second at
// exit (the race detector's default), which Stop would time.
const noRaceSleep = "GORACE=atexit_sleep_ms=0"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fixtureEnv); mode != "" {
		os.Exit(runFixture(mode))
	}
	os.Exit(m.Run())
}

// runFixture is the test binary as a server (it prints the pid of the
// process it left behind on stdout, then exits at the end of its stdin) or
// as a process of the server's tree.
func runFixture(mode string) int {
	switch mode {
	case "sleep": // a descendant that dies of SIGTERM
		time.Sleep(time.Minute)
	case "sleep-noterm": // a descendant that must be killed
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Minute)
	case "sleep-short": // a descendant that exits by itself soon
		time.Sleep(50 * time.Millisecond)
	case "group": // server: a child left in its process group
		return serve(spawn("sleep", nil, os.Stdout))
	case "setsid": // server: a child in a new session
		return serve(spawn("sleep", &syscall.SysProcAttr{Setsid: true}, nil))
	case "setsid-noterm": // server: a child in a new session that ignores SIGTERM
		return serve(spawn("sleep-noterm", &syscall.SysProcAttr{Setsid: true}, nil))
	case "setsid-stopped": // server: a child in a new session, stopped (SIGSTOP)
		cmd := fixtureCmd("sleep", &syscall.SysProcAttr{Setsid: true})
		if err := cmd.Start(); err != nil || syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP) != nil {
			return 1
		}
		for st, _ := readStat(cmd.Process.Pid); st.state != 'T'; st, _ = readStat(cmd.Process.Pid) {
			time.Sleep(time.Millisecond)
		}
		fmt.Println(cmd.Process.Pid)
		return serve(0)
	case "setsid-forkloop": // server: a child in a new session that forks without end
		return serve(spawn("forkloop", &syscall.SysProcAttr{Setsid: true}, nil))
	case "forkloop":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		// Forks as fast as it can while Stop walks the tree, but at most
		// maxForks times: without a bound it used up the machine's
		// processes for every other test running beside it.
		const maxForks = 400
		for i := 0; i < maxForks; i++ {
			_ = fixtureCmd("sleep", nil).Start()
		}
		select {}
	case "doublefork", "doublefork-short": // server: a daemon, re-parented to mcpsign
		sleeper := "sleep"
		if mode == "doublefork-short" {
			sleeper = "sleep-short"
		}
		cmd := fixtureCmd("fork-exit", &syscall.SysProcAttr{Setsid: true})
		cmd.Env = append(cmd.Env, "PROCTREE_SLEEPER="+sleeper)
		// The pid once the first fork has exited: re-parented by then.
		pid, err := cmd.Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(pid)
		return serve(0)
	case "fork-exit": // the daemon's first fork: starts it and exits
		spawn(os.Getenv("PROCTREE_SLEEPER"), nil, nil)
		return 0
	default:
		fmt.Fprintln(os.Stderr, "unknown fixture", mode)
		return 2
	}
	return 0
}

func fixtureCmd(mode string, attr *syscall.SysProcAttr) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fixtureEnv+"="+mode, noRaceSleep)
	cmd.SysProcAttr = attr
	return cmd
}

// spawn starts a fixture, prints its pid and leaves it running. One that
// ignores SIGTERM is waited for until it does.
func spawn(mode string, attr *syscall.SysProcAttr, stdout *os.File) int {
	cmd := fixtureCmd(mode, attr)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	var ready io.Reader
	if mode == "sleep-noterm" || mode == "forkloop" {
		r, err := cmd.StdoutPipe()
		if err != nil {
			os.Exit(1)
		}
		ready = r
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if ready != nil {
		if line, err := bufio.NewReader(ready).ReadString('\n'); err != nil || line != "ready\n" {
			fmt.Fprintln(os.Stderr, "fixture not ready:", line, err)
			os.Exit(1)
		}
	}
	fmt.Println(cmd.Process.Pid)
	return cmd.Process.Pid
}

// serve reads stdin to its end, as a stdio server does.
func serve(int) int {
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// started is a fixture server started through Start.
type started struct {
	p      *Piped
	exited chan struct{}
	left   ident // the process it left behind
}

func (s *started) waitExit(d time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// startFixture starts the test binary as the fixture server mode and reads
// the pid of the process it leaves behind.
func startFixture(t *testing.T, mode string) *started {
	t.Helper()
	p, err := Start([]string{os.Args[0]}, []string{fixtureEnv + "=" + mode, noRaceSleep}, "")
	if err != nil {
		t.Fatal(err)
	}
	s := &started{p: p, exited: make(chan struct{})}
	go func() {
		_ = p.Cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		p.Stdin.Close()
		p.Stop(time.Second, s.waitExit)
		p.Stdout.Close()
		p.Stderr.Close()
	})
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the fixture's pid: %v (%q)", err, line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("process %d left by %s is not there", pid, mode)
	}
	s.left = st.ident()
	t.Cleanup(func() {
		if !gone(s.left) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return s
}

// gone reports whether the process id is no more: no /proc entry (so not a
// zombie either), or one of another process.
func gone(id ident) bool {
	s, ok := readStat(id.pid)
	return !ok || s.start != id.start
}

// TestStopTree: whatever way a server's descendant left it, Stop leaves
// neither it nor its zombie, within the grace unless it ignores SIGTERM.
func TestStopTree(t *testing.T) {
	// Unbroken, a tree that heeds SIGTERM is gone in milliseconds; broken
	// (Stop waits out its grace) it takes the grace. 2 s (was 400 ms)
	// leaves a loaded machine its lateness; only setsid-noterm waits it.
	const grace = 2 * time.Second
	for _, tc := range []struct {
		mode       string
		reparented bool          // a child of ours before Stop
		within     time.Duration // Stop returns within
	}{
		{"group", false, grace},
		{"setsid", false, grace},
		{"doublefork", true, grace},
		{"setsid-noterm", false, 3 * grace},
		{"setsid-stopped", false, grace},
		{"setsid-forkloop", false, 5 * grace}, // each walk reads hundreds of processes
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s := startFixture(t, tc.mode)
			st, _ := readStat(s.left.pid)
			if tc.reparented != (st.ppid == os.Getpid()) {
				t.Fatalf("process %d has parent %d, we are %d (subreaper)", st.pid, st.ppid, os.Getpid())
			}
			if tc.mode != "group" && st.pgrp == s.p.Cmd.Process.Pid {
				t.Fatalf("process %d is still in the server's group", st.pid)
			}
			s.p.Stdin.Close()
			begin := time.Now()
			s.p.Stop(grace, s.waitExit)
			took := time.Since(begin)
			if !gone(s.left) {
				st, _ := readStat(s.left.pid)
				t.Fatalf("process %d is still there after Stop, state %c", st.pid, st.state)
			}
			if st.session == st.pid {
				if left := inSession(st.session); len(left) > 0 {
					t.Fatalf("processes %v are still in the session of %d", left, st.pid)
				}
			}
			if took > tc.within {
				t.Errorf("Stop took %v, want at most %v", took, tc.within)
			}
			s.p.Stop(grace, s.waitExit) // again: nothing to do
		})
	}
}

// inSession returns the processes (zombies included) of the session sid.
func inSession(sid int) []int {
	w := walker{}
	w.scan() // the fallback walk, tested here too
	var pids []int
	for _, children := range w.byPpid {
		for _, pid := range children {
			if s, ok := readStat(pid); ok && s.session == sid {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestReapWhileRunning: a daemon of the server that dies while the server
// runs is re-parented to us and reaped, not left a zombie.
func TestReapWhileRunning(t *testing.T) {
	s := startFixture(t, "doublefork-short")
	deadline := time.Now().Add(30 * time.Second) // a hang bound: a zombie stays for good
	for !gone(s.left) {
		if time.Now().After(deadline) {
			st, _ := readStat(s.left.pid)
			t.Fatalf("process %d still there, state %c, parent %d", st.pid, st.state, st.ppid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-s.exited:
		t.Fatal("the server exited: the reap was not while it ran")
	default:
	}
}

// TestStopLeavesOthers: stopping one server leaves alone another server and
// its tree, and a child this program started in its own process group.
func TestStopLeavesOthers(t *testing.T) {
	a := startFixture(t, "setsid")
	b := startFixture(t, "setsid")
	other := fixtureCmd("sleep", nil)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		other.Process.Kill()
		other.Wait()
	}()
	otherStat, _ := readStat(other.Process.Pid)
	// Both trees recorded by their poll: waited for, not slept for (one
	// poll interval and 100 ms was not always enough on a loaded machine).
	for _, s := range []*started{a, b} {
		if !waitRecorded(s.p.tree, s.left, 30*time.Second) {
			t.Fatalf("the setsid child %d was never recorded in its server's tree", s.left.pid)
		}
	}
	a.p.Stdin.Close()
	a.p.Stop(300*time.Millisecond, a.waitExit)
	if !gone(a.left) {
		t.Errorf("the first server's setsid child %d survived its Stop", a.left.pid)
	}
	bLeader, _ := readStat(b.p.Cmd.Process.Pid)
	for name, id := range map[string]ident{
		"the second server":            bLeader.ident(),
		"the second server's child":    b.left,
		"a child of ours in our group": otherStat.ident(),
	} {
		if s, ok := readStat(id.pid); !ok || s.ident() != id || s.zombie() {
			t.Errorf("%s (%d) was stopped with the first server", name, id.pid)
		}
	}
	b.p.Stdin.Close()
	b.p.Stop(300*time.Millisecond, b.waitExit)
	if !gone(b.left) {
		t.Errorf("the second server's setsid child %d survived its Stop", b.left.pid)
	}
}

// waitRecorded waits up to d until t's poll recorded id as a member.
func waitRecorded(t *tree, id ident, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		registry.Lock()
		_, ok := t.seen[id]
		registry.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// TestSignalChecksStartTime: a pid whose start time is not the one recorded
// (a reused pid) is not signalled.
func TestSignalChecksStartTime(t *testing.T) {
	cmd := fixtureCmd("sleep", nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	st, ok := readStat(cmd.Process.Pid)
	if !ok {
		t.Fatal("no stat for the child")
	}
	reused := ident{pid: st.pid, start: st.start + 1}
	if sendSignal(reused, syscall.SIGKILL) {
		t.Fatal("a process with another start time was signalled")
	}
	time.Sleep(20 * time.Millisecond)
	if s, ok := readStat(st.pid); !ok || s.zombie() {
		t.Fatal("the child died of a signal meant for another process")
	}
	if !sendSignal(st.ident(), syscall.SIGKILL) {
		t.Fatal("the recorded process was not signalled")
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child did not die of SIGKILL: %v", err)
	}
}

// BenchmarkPoll is one recording of a running server's tree: what the proxy
// spends every pollInterval while the session lasts.
func BenchmarkPoll(b *testing.B) {
	p, err := Start([]string{os.Args[0]}, []string{fixtureEnv + "=setsid", noRaceSleep}, "")
	if err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = p.Cmd.Wait(); close(exited) }()
	s := &started{p: p, exited: exited}
	defer func() {
		p.Stdin.Close()
		p.Stop(time.Second, s.waitExit)
	}()
	if _, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if live, _ := p.tree.sweep(); len(live) != 1 {
			b.Fatalf("%d live descendants, want the setsid child", len(live))
		}
	}
}

// TestConcurrentTrees: servers started and stopped at the same time do not
// take each other for an orphan: each exits by itself (status 0) at the end
// of its stdin. A setsid child re-parented to us before it was recorded may
// descend from any of the servers that ran when it started, so it is
// stopped with the last of them: once all are stopped, none is left.
func TestConcurrentTrees(t *testing.T) {
	const n = 6
	for round := 0; round < 3; round++ {
		type result struct {
			child ident
			err   error
		}
		results := make(chan result, n)
		for i := 0; i < n; i++ {
			go func() {
				p, err := Start([]string{os.Args[0]}, []string{fixtureEnv + "=setsid", noRaceSleep}, "")
				if err != nil {
					results <- result{err: err}
					return
				}
				s := &started{p: p, exited: make(chan struct{})}
				go func() { _ = p.Cmd.Wait(); close(s.exited) }()
				line, err := bufio.NewReader(p.Stdout).ReadString('\n')
				pid, _ := strconv.Atoi(strings.TrimSpace(line))
				st, ok := readStat(pid)
				p.Stdin.Close()
				p.Stop(time.Second, s.waitExit)
				p.Stdout.Close()
				p.Stderr.Close()
				switch {
				case err != nil || !ok:
					results <- result{err: fmt.Errorf("no setsid child: %q, %v", line, err)}
				case !p.Cmd.ProcessState.Success():
					results <- result{child: st.ident(), err: fmt.Errorf("server %d: %v", p.Cmd.Process.Pid, p.Cmd.ProcessState)}
				default:
					results <- result{child: st.ident()}
				}
			}()
		}
		var children []ident
		for i := 0; i < n; i++ {
			r := <-results
			if r.err != nil {
				t.Error(r.err)
			}
			if r.child.pid != 0 {
				children = append(children, r.child)
			}
		}
		for _, c := range children {
			if !gone(c) {
				syscall.Kill(c.pid, syscall.SIGKILL)
				t.Errorf("setsid child %d survived every Stop", c.pid)
			}
		}
	}
}

// TestCollectRecorded: a process recorded in a tree is a member while it is
// that process (its pid and start time), never once its pid names another,
// and the members are at most the tree's limit. The process is older than
// the tree's leader, so that only the record reaches it (owns refuses it).
func TestCollectRecorded(t *testing.T) {
	start := func(attr *syscall.SysProcAttr) ident {
		cmd := fixtureCmd("sleep", attr)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		st, ok := readStat(cmd.Process.Pid)
		if !ok {
			t.Fatalf("no stat for the child %d", cmd.Process.Pid)
		}
		return st.ident()
	}
	recorded := start(nil)
	leader := start(&syscall.SysProcAttr{Setpgid: true})
	for _, tc := range []struct {
		name  string
		seen  ident
		limit int
		want  []int
	}{
		{"recorded", recorded, maxMembers, []int{recorded.pid}},
		{"at the limit", recorded, 1, []int{recorded.pid}},
		{"beyond the limit", recorded, 0, nil},
		{"its pid reused", ident{pid: recorded.pid, start: recorded.start + 1}, maxMembers, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &tree{
				leader:   leader,
				self:     os.Getpid(),
				selfPgrp: syscall.Getpgrp(),
				seen:     map[ident]struct{}{tc.seen: {}},
				limit:    tc.limit,
			}
			registry.Lock()
			members := tr.collect()
			registry.Unlock()
			var got []int
			for _, m := range members {
				got = append(got, m.pid)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("members %v, want %v", got, tc.want)
			}
		})
	}
}
