package proctree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

// Bounds of the work on a tree.
const (
	// maxMembers caps the descendants of one server that are tracked and
	// signalled; beyond it the walk stops (the group signals still reach
	// those in the server's group).
	maxMembers = 4096
	// pollInterval is how often a running server's descendants are
	// recorded, and the zombies it leaves with mcpsign reaped.
	pollInterval = 250 * time.Millisecond
	// sweepInterval is the pause between two walks while stopping.
	sweepInterval = 10 * time.Millisecond
)

// ErrSubreaper is returned by Start when mcpsign cannot make itself the
// child subreaper (prctl PR_SET_CHILD_SUBREAPER): a server's orphans would
// then escape to init, so no server is started.
var ErrSubreaper = errors.New("proctree: cannot become the child subreaper of the servers' orphans")

// subreaper is the process-wide (and permanent) PR_SET_CHILD_SUBREAPER
// setting, made once, before the first server starts.
var subreaper = lazy.New(becomeSubreaper)

func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%w: %w", ErrSubreaper, err)
	}
	return nil
}

// prepare runs before a server starts.
func prepare() error { return subreaper.Get() }

// registry holds the trees of the servers started and not yet stopped. It is
// process-wide because what it arbitrates is: the subreaper setting and the
// children of this process, to which every server's orphans are
// re-parented. Its mutex also guards every tree's seen set.
var registry = struct {
	sync.Mutex
	trees map[*tree]struct{} // made by the first register: no work at start
}{}

// tree is the process tree under one server.
type tree struct {
	leader   ident // the server, reaped by its exec.Cmd's Wait, never by us
	self     int   // our pid
	selfPgrp int   // our process group
	seen     map[ident]struct{}
	limit    int           // members tracked at most: maxMembers (a test lowers it)
	stopping bool          // set when stop begins, under registry's lock
	quit     chan struct{} // closed by stop: ends the poll
	done     chan struct{} // closed when the poll has ended
	stopOnce sync.Once
}

// startTree starts cmd and tracks the descendants of the server. The start
// and the registration are one step under the registry's lock, so that no
// other tree's walk sees the new server as a child of ours before it is
// known as a server.
func startTree(cmd *exec.Cmd) (*tree, error) {
	registry.Lock()
	defer registry.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s, ok := readStat(cmd.Process.Pid) // not reaped: nobody waits for it yet
	if !ok {
		Kill(cmd.Process.Pid)
		_ = cmd.Wait()
		return nil, fmt.Errorf("proctree: reading /proc/%d/stat of the server", cmd.Process.Pid)
	}
	t := &tree{
		leader:   s.ident(),
		self:     os.Getpid(),
		selfPgrp: unix.Getpgrp(),
		seen:     map[ident]struct{}{},
		limit:    maxMembers,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if registry.trees == nil {
		registry.trees = map[*tree]struct{}{}
	}
	registry.trees[t] = struct{}{}
	go t.poll()
	return t, nil
}

// poll records the server's descendants while it runs, so that one that
// later leaves its group or is re-parented to us stays known, and reaps
// those that died as our children.
func (t *tree) poll() {
	defer close(t.done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.quit:
			return
		case <-tick.C:
			_, _ = t.sweep()
		}
	}
}

// sweep walks the tree once, records what it found, reaps the zombies that
// are our children and returns the live members and how many members (live
// or zombie) it found.
func (t *tree) sweep() (live []procStat, found int) {
	members := t.record()
	for _, m := range members {
		if !m.zombie() {
			live = append(live, m)
			continue
		}
		if m.ppid == t.self && m.ident() != t.leader {
			// Our child, a zombie: its pid cannot be reused before this
			// wait, which is for this pid only (exec.Cmd's own waits are
			// for their own pids: never wait4(-1)).
			var ws unix.WaitStatus
			_, _ = unix.Wait4(m.pid, &ws, unix.WNOHANG, nil)
		}
	}
	return live, len(members)
}

// record collects the tree's members and records them as seen, under the
// registry's lock, which it releases even if the walk panics (a panic while
// it is held would leave stop's deferred unregistering waiting for good).
func (t *tree) record() []procStat {
	registry.Lock()
	defer registry.Unlock()
	members := t.collect()
	seen := make(map[ident]struct{}, len(members))
	for _, m := range members {
		seen[m.ident()] = struct{}{}
	}
	t.seen = seen
	return members
}

// collect returns the server's descendants (live and zombie, without the
// server itself): those below the server, those recorded earlier and still
// there, and those re-parented to us that belong to this tree (see owns),
// with everything below them. At most t.limit. registry must be locked.
func (t *tree) collect() []procStat {
	w := walker{}
	var members []procStat
	have := map[int]bool{t.leader.pid: true}
	var queue []int
	add := func(s procStat) {
		if have[s.pid] || len(members) >= t.limit {
			return
		}
		have[s.pid] = true
		members = append(members, s)
		queue = append(queue, s.pid)
	}
	if s, ok := readStat(t.leader.pid); ok && s.ident() == t.leader {
		queue = append(queue, t.leader.pid)
	}
	for id := range t.seen {
		if s, ok := readStat(id.pid); ok && s.ident() == id {
			add(s)
		}
	}
	for _, pid := range w.children(t.self) {
		if s, ok := readStat(pid); ok && s.ppid == t.self && t.owns(s) {
			add(s)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range w.children(pid) {
			// A descendant started after the server; a child listed
			// otherwise is a pid reused meanwhile.
			if s, ok := readStat(c); ok && s.ppid == pid && s.start >= t.leader.start {
				add(s)
			}
		}
	}
	return members
}

// owns reports whether s, a child of ours, is a descendant of this server
// re-parented to us, rather than another server or a process the rest of
// this program started (which stays in our process group). registry must
// be locked.
func (t *tree) owns(s procStat) bool {
	if s.start < t.leader.start {
		return false // older than the server
	}
	if _, ok := t.seen[s.ident()]; ok {
		return true
	}
	for o := range registry.trees {
		if o == t {
			continue
		}
		if s.ident() == o.leader || s.pgrp == o.leader.pid {
			return false // another server, or in its group
		}
		if _, ok := o.seen[s.ident()]; ok {
			return false
		}
	}
	if s.pgrp == t.leader.pid {
		// In the server's group: a group id is not reused while the
		// group has members, so this is the server's group.
		return true
	}
	if s.pgrp == t.selfPgrp {
		return false // started by this program without a group of its own
	}
	for o := range registry.trees {
		if o != t && !o.stopping && o.leader.start <= s.start {
			// It may descend from that server, still running, as well:
			// it is left to whichever of the two stops last.
			return false
		}
	}
	return true
}

// stop signals every remaining descendant, once the server's group has been
// stopped: SIGTERM, then after grace SIGKILL (each process first frozen with
// SIGSTOP until no new one appears, so that forking cannot outrun the
// kill), then it reaps what was re-parented to us, for at most grace more.
// Every signal names the process by pid and start time (through a pidfd).
func (t *tree) stop(grace time.Duration) {
	t.stopOnce.Do(func() {
		close(t.quit)
		<-t.done
		registry.Lock()
		t.stopping = true
		registry.Unlock()
		defer func() {
			registry.Lock()
			delete(registry.trees, t)
			registry.Unlock()
		}()
		termed := map[ident]bool{}
		deadline := time.Now().Add(grace)
		for {
			live, _ := t.sweep()
			if len(live) == 0 {
				break
			}
			for _, m := range live {
				if !termed[m.ident()] {
					termed[m.ident()] = true
					sendSignal(m.ident(), unix.SIGTERM)
					// A stopped process sees SIGTERM only once continued.
					sendSignal(m.ident(), unix.SIGCONT)
				}
			}
			if time.Now().After(deadline) {
				t.kill(grace)
				break
			}
			time.Sleep(sweepInterval)
		}
		// The dead may still wait for their parents to die, then be
		// re-parented to us: reap them.
		deadline = time.Now().Add(grace)
		for time.Now().Before(deadline) {
			if _, found := t.sweep(); found == 0 {
				break
			}
			time.Sleep(sweepInterval)
		}
	})
}

// kill freezes and then kills every live descendant, for at most grace.
func (t *tree) kill(grace time.Duration) {
	frozen := map[ident]bool{}
	defer func() {
		for id := range frozen {
			sendSignal(id, unix.SIGKILL)
		}
	}()
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		live, _ := t.sweep()
		if len(live) == 0 {
			return
		}
		fresh := false
		for _, m := range live {
			if !frozen[m.ident()] {
				frozen[m.ident()] = true
				fresh = true
				sendSignal(m.ident(), unix.SIGSTOP)
			}
		}
		if !fresh {
			for _, m := range live {
				sendSignal(m.ident(), unix.SIGKILL)
			}
		}
		time.Sleep(sweepInterval)
	}
}

// sendSignal sends sig to the process id names, if it is still that process:
// through a pidfd opened before its start time is compared, so that a pid
// reused meanwhile is never signalled. Where pidfds are missing (Linux
// before 5.3) the comparison is made just before kill.
func sendSignal(id ident, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(id.pid, 0)
	switch {
	case err == nil:
		defer unix.Close(fd)
		if s, ok := readStat(id.pid); !ok || s.ident() != id || s.zombie() {
			return false
		}
		return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
	case errors.Is(err, unix.ESRCH):
		return false
	}
	if s, ok := readStat(id.pid); !ok || s.ident() != id || s.zombie() {
		return false
	}
	return unix.Kill(id.pid, sig) == nil
}

// walker lists children, from /proc/<pid>/task/<tid>/children where the
// kernel has it (CONFIG_PROC_CHILDREN), else from one scan of every
// /proc/<pid>/stat.
type walker struct {
	scanned bool
	byPpid  map[int][]int
}

// children returns the pids of pid's children (those of all its threads).
func (w *walker) children(pid int) []int {
	if !w.scanned {
		dir := "/proc/" + strconv.Itoa(pid) + "/task"
		tids, err := readDirNames(dir)
		if err != nil {
			return nil // gone
		}
		var pids []int
		for _, tid := range tids {
			b, err := readProc(dir + "/" + tid + "/children")
			if errors.Is(err, os.ErrNotExist) {
				if _, serr := os.Stat(dir + "/" + tid); serr == nil {
					w.scan() // the kernel has no children files
					return w.byPpid[pid]
				}
				continue // the thread ended
			}
			if err != nil {
				continue
			}
			more, err := parsePids(b)
			if err != nil {
				continue
			}
			pids = append(pids, more...)
		}
		return pids
	}
	return w.byPpid[pid]
}

// scan reads the parent of every process once.
func (w *walker) scan() {
	w.scanned = true
	w.byPpid = map[int][]int{}
	names, _ := readDirNames("/proc")
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if s, ok := readStat(pid); ok {
			w.byPpid[s.ppid] = append(w.byPpid[s.ppid], pid)
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
