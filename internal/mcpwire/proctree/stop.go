package proctree

import (
	"os/exec"
	"time"
)

// PromptGrace is the grace a caller gives in Stop when nothing more is
// wanted from the server (the user pressed Ctrl-C, a time limit ran out):
// the server's group gets SIGTERM after it, and SIGKILL after it again,
// instead of after the orderly shutdown's seconds each.
const PromptGrace = 250 * time.Millisecond

// Stop ends the process group led by pid, and nothing outside it
// (Piped.Stop ends the whole tree), once the caller has closed the leader's
// stdin (the MCP way to ask a stdio server to exit): it waits up to grace
// for the leader to exit (leaderExited reports whether it did within a
// duration), then sends SIGTERM, then SIGKILL, each after grace; then
// whatever the leader left in its group gets the same.
func Stop(pid int, grace time.Duration, leaderExited func(time.Duration) bool) {
	if !leaderExited(grace) {
		Terminate(pid)
		if !leaderExited(grace) {
			Kill(pid)
			leaderExited(grace)
		}
	}
	if Alive(pid) {
		Terminate(pid)
		if !WaitGone(pid, grace) {
			Kill(pid)
			WaitGone(pid, grace)
		}
	}
}

// WaitGone polls until no live process is left in the group pgid, for at
// most d, and reports whether the group is gone.
func WaitGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !Alive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetGroup makes cmd, when started, the leader of a process group of its
// own where the platform has them (as Start does), so that Kill and
// Terminate of its PID reach it and every child it starts.
func SetGroup(cmd *exec.Cmd) { setGroup(cmd) }
