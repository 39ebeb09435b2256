// Package proctree starts an MCP server with plain pipes for its standard
// streams and stops it with its whole process tree, so that no descendant of
// a server outlives mcpsign: not a child left in the server's process group,
// not one that called setsid or double-forked to leave it (docs/PROXY.md,
// "The server's process tree"). A server is untrusted code that mcpsign
// started; whatever it leaves running keeps its authority after the session
// that mcpsign was enforcing has ended. The source (listing a stdio server)
// and the proxy share it.
//
// Everywhere on Unix the server is the leader of a new process group, which
// Piped.Stop signals as a whole: stdin closed by the caller, then SIGTERM,
// then SIGKILL. On Linux it then walks the server's descendants (from
// /proc) and signals those that left the group the same way.
//
// # Linux: the child subreaper
//
// Before the first server starts, Start makes this process the child
// subreaper (prctl PR_SET_CHILD_SUBREAPER), so that a descendant orphaned by
// its parent's exit is re-parented to this process rather than to init and
// stays within reach. The setting is process-wide and permanent: the
// orphans of any other child of this process are re-parented to it as well.
// That is harmless for mcpsign, the mcpsign-proxy and a test binary
// (they are left as zombies until the process exits), and an embedder
// should know it. This package reaps only what it takes for a server's
// descendant, with wait4 on that one pid, never wait4(-1), so the exec.Cmd
// of the server and every other child keep their own Wait.
//
// A child of ours counts as a server's descendant when it was seen below
// the server (the tree is recorded every 250 ms while the server runs), is
// in the server's process group, or started after the server, in a process
// group other than ours, and no other server of this process that started
// before it still runs (it may descend from that one: it is left to the last
// of them to stop). So a process that the
// rest of a program starts in a process group of its own while a server
// runs may be taken for the server's; mcpsign starts none.
//
// Every process is recorded with its start time (field 22 of
// /proc/<pid>/stat) and signalled through a pidfd only after the start time
// is compared, so a reused pid is never signalled. The work is bounded: at
// most 4096 descendants, each phase at most the grace given to Stop.
//
// # Elsewhere
//
// Other Unix systems (macOS, the BSDs) get the process group only: a
// descendant that called setsid or setpgid escapes. Windows has no process
// groups here: Stop kills the server process alone, not its children.
package proctree

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

// Piped is a started process and mcpsign's ends of its standard streams.
type Piped struct {
	Cmd    *exec.Cmd
	Stdin  *os.File // write end of the server's stdin
	Stdout *os.File // read end of the server's stdout
	Stderr *os.File // read end of the server's stderr

	tree *tree
}

// Stop ends the server and its whole process tree once the caller has
// closed Stdin (the MCP way to ask a stdio server to exit): the process
// group as the package function Stop does, then, on Linux, every descendant
// that is left (see the package documentation), SIGTERM and after grace
// SIGKILL, and the zombies re-parented to this process are reaped. It
// returns when nothing is left or the bounds are reached; it must be called
// once the server is done with (it also ends the tracking), and may be
// called again.
func (p *Piped) Stop(grace time.Duration, leaderExited func(time.Duration) bool) {
	Stop(p.Cmd.Process.Pid, grace, leaderExited)
	p.tree.stop(grace)
}

// Start starts argv in a new process group with env added to the inherited
// environment (when not nil) and dir as its working directory (when not
// empty). The pipes are plain os.Pipe files, not exec's goroutine-backed
// ones, so that Wait returns when the process exits even if a child of it
// still holds a pipe, and a pending read is unblocked by closing our end.
// On Linux it first makes this process the child subreaper (ErrSubreaper
// if it cannot) and then tracks the server's descendants until Piped.Stop.
func Start(argv []string, env []string, dir string) (_ *Piped, err error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command given")
	}
	var toClose []*os.File
	defer func() {
		if err != nil {
			for _, f := range toClose {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			toClose = append(toClose, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	setGroup(cmd)
	if err := prepare(); err != nil {
		return nil, err
	}
	t, err := startTree(cmd)
	if err != nil {
		return nil, err
	}
	// The child has its ends now; ours must go so that EOF can be seen.
	inR.Close()
	outW.Close()
	errW.Close()
	return &Piped{Cmd: cmd, Stdin: inW, Stdout: outR, Stderr: errR, tree: t}, nil
}
