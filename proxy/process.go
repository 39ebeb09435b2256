package proxy

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/mcpwire/proctree"
	"github.com/mcpsign/mcpsign/internal/rawio"
)

// child is the server process: started in a process group of its own so
// that it and everything it starts can be stopped together.
type child struct {
	cmd    *exec.Cmd
	pid    int
	proc   *proctree.Piped
	stdin  *os.File  // our end of its stdin
	input  io.Writer // stdin as Send writes it (internal/rawio)
	stdout *os.File  // our end of its stdout
	stderr *os.File  // our end of its stderr

	stderrDone chan struct{} // closed when stderr is drained
	exited     chan struct{} // closed when Wait returned
	waitErr    error         // from Wait, valid after exited

	stdinOnce sync.Once
	stopOnce  sync.Once

	maxMessage int                 // the cap of one line read from stdout
	lines      *mcpwire.LineReader // of stdout, made by the one reader (Receive)
}

// startChild starts argv with pipes for its standard streams. The pipes are
// plain os.Pipe files, not exec's goroutine-backed ones, so that Wait
// returns when the process exits even if a grandchild still holds a pipe.
// Its stderr is copied to stderr (escaped, line by line) until it ends.
func startChild(argv []string, env []string, dir string, stderr io.Writer, maxMessage int) (*child, error) {
	p, err := proctree.Start(argv, env, dir)
	if err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	cmd := p.Cmd
	inW, outR, errR := p.Stdin, p.Stdout, p.Stderr
	c := &child{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		proc:       p,
		stdin:      inW,
		input:      rawio.Writer(inW),
		stdout:     outR,
		stderr:     errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		maxMessage: maxMessage,
	}
	go c.drainStderr(stderr)
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// drainStderr copies the server's stderr to w with every control, bidi and
// invisible character escaped (a server must not be able to write terminal
// escape sequences through the proxy), one line at a time.
func (c *child) drainStderr(w io.Writer) {
	defer close(c.stderrDone)
	if w == nil {
		w = io.Discard
	}
	copyEscapedLines(w, c.stderr, "")
}

// closeStdin closes the server's stdin: the MCP way to ask a stdio server
// to exit.
func (c *child) closeStdin() {
	c.stdinOnce.Do(func() { c.stdin.Close() })
}

// Wait waits up to d for the process to exit.
func (c *child) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// Stop shuts the server down as the MCP specification asks for stdio:
// stdin closed, then SIGTERM, then SIGKILL, each after grace, the signals to
// its whole process group; then whatever the leader left in its group gets
// the same. It is idempotent and returns once the server has exited.
func (c *child) Stop(grace time.Duration) {
	c.stopOnce.Do(func() {
		c.closeStdin()
		c.proc.Stop(grace, c.Wait)
		select {
		case <-c.stderrDone:
		case <-time.After(100 * time.Millisecond):
		}
		c.stderr.Close()
		<-c.stderrDone
		c.stdout.Close()
	})
}

// Exit describes how the server exited, and reports whether it exited
// with status 0.
func (c *child) Exit() (status string, clean bool) {
	select {
	case <-c.exited:
	default:
		return "still running", false
	}
	status = "exited"
	if c.cmd.ProcessState != nil {
		status = c.cmd.ProcessState.String()
	}
	return status, c.waitErr == nil
}
