package source

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/mcpwire/proctree"
)

// stderrTailBytes is how much of a server's stderr is kept for the error
// message when it exits early.
const stderrTailBytes = 4 << 10

// loadStdio starts argv as a stdio MCP server in its own process group,
// lists it, and shuts it down (also on error and cancellation).
func loadStdio(parent context.Context, argv []string, o *Options) (*digest.Snapshot, error) {
	ctx, abort, stop := withLimits(parent, o)
	defer stop()
	o.Progress(StageStart, 0)
	p, err := startServer(argv, o)
	if err != nil {
		return nil, &StageError{Stage: StageStart, Err: err}
	}
	w := newStdioWire(p.stdout, p.stdin, o.MaxMessageBytes, p.stopping)
	defer func() {
		grace := o.ShutdownGrace // stdin closed first: the spec's orderly shutdown
		if ctx.Err() != nil {
			// Interrupted (Ctrl-C), out of time, or the server is gone:
			// nothing more is wanted from it, so no seconds of grace.
			grace = min(grace, proctree.PromptGrace)
		}
		p.shutdown(grace)
		p.stdout.Close() // ends the reader, whoever still holds the pipe
	}()
	// The end of stdout is how a server's exit usually shows, but a child
	// of it may hold stdout open: watch the process itself too. The delay
	// lets the reader take what the server wrote before it exited.
	go func() {
		select {
		case <-p.exited:
		case <-ctx.Done():
			return
		}
		t := time.NewTimer(exitAbortDelay)
		defer t.Stop()
		select {
		case <-t.C:
			abort(p.exitError())
		case <-ctx.Done():
		}
	}()
	s := &session{w: w, o: o, exited: p.exitError}
	return s.run(ctx)
}

// exitAbortDelay is how long after the server's exit the exchange is
// aborted if the end of its stdout has not shown it yet.
const exitAbortDelay = 250 * time.Millisecond

// server is a started stdio server process.
type server struct {
	cmd    *exec.Cmd
	pid    int
	proc   *proctree.Piped
	stdin  *onceCloser // our end of its stdin
	stdout *os.File    // our end of its stdout
	stderr *os.File    // our end of its stderr

	tail       tailBuffer
	stderrDone chan struct{} // closed when stderr is drained
	exited     chan struct{} // closed when Wait returned
	waitErr    error         // from Wait, valid after exited
	stopOnce   sync.Once
	stopping   chan struct{} // closed when shutdown begins
}

// startServer starts argv with pipes for stdin, stdout and stderr, in a
// new process group. The pipes are plain os.Pipe files (not exec's
// goroutine-backed ones), so that Wait returns when the process exits even
// if a child of it still holds a pipe, and a pending read can be unblocked
// by closing our end.
func startServer(argv []string, o *Options) (*server, error) {
	p, err := proctree.Start(argv, o.Env, "")
	if err != nil {
		return nil, err
	}
	cmd := p.Cmd
	inW, outR, errR := p.Stdin, p.Stdout, p.Stderr
	s := &server{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		proc:       p,
		stdin:      &onceCloser{f: inW},
		stdout:     outR,
		stderr:     errR,
		tail:       tailBuffer{max: stderrTailBytes},
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		stopping:   make(chan struct{}),
	}
	go s.drainStderr(o.Stderr)
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

func (s *server) drainStderr(w io.Writer) {
	defer close(s.stderrDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.stderr.Read(buf)
		if n > 0 {
			s.tail.Write(buf[:n])
			if w != nil {
				w.Write(buf[:n]) // best effort: a failing writer must not stop the drain
			}
		}
		if err != nil {
			return
		}
	}
}

// waitExit waits up to d for the process to exit.
func (s *server) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitError reports the server gone: its exit status and the tail of its
// stderr once it has exited, or that it closed its stdout while still
// running. It waits up to a second for the exit status, as the end of
// stdout usually comes just before the exit.
func (s *server) exitError() error {
	if !s.waitExit(time.Second) {
		return &ExitError{Stderr: s.tail.String()}
	}
	// Let the stderr drain reach its end so the tail is complete.
	select {
	case <-s.stderrDone:
	case <-time.After(500 * time.Millisecond):
	}
	status := "exited"
	if s.cmd.ProcessState != nil {
		status = s.cmd.ProcessState.String()
	}
	return &ExitError{Status: status, Stderr: s.tail.String()}
}

// shutdown stops the server as the MCP spec asks for stdio: close its stdin,
// wait for it to exit, then SIGTERM, then SIGKILL, each after grace; the
// signals go to its whole process group. Whatever the leader leaves behind
// in its group is terminated the same way, so no orphan is left. It also
// releases stderr; it is idempotent.
func (s *server) shutdown(grace time.Duration) {
	s.stopOnce.Do(func() {
		s.stdin.Close()
		// The reader of stdout goes on reading meanwhile (stdioWire: the
		// exchange may have stopped reading mid-message), so a server
		// blocked writing can see the end of its stdin and exit.
		close(s.stopping)
		s.proc.Stop(grace, s.waitExit)
		// Give stderr a moment to reach EOF, then unblock the drain in case
		// a process outside the group still holds the pipe; after this no
		// more writes go to Options.Stderr.
		select {
		case <-s.stderrDone:
		case <-time.After(100 * time.Millisecond):
		}
		s.stderr.Close()
		<-s.stderrDone
	})
}

// onceCloser is the write end of the server's stdin; it may be closed by
// the shutdown and again by the transport.
type onceCloser struct {
	f    *os.File
	once sync.Once
	err  error
}

func (c *onceCloser) Write(p []byte) (int, error) { return c.f.Write(p) }

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.f.Close() })
	return c.err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(bytes.TrimRight(b, " \t\r\n"))
}

// stdioWire reads a stdio server's stdout one line, one message, at a time
// (mcpwire.LineReader, capped at max bytes, framing checked as the
// strictest client reads it) and writes messages to its stdin.
type stdioWire struct {
	stdin io.Writer
	lines chan lineOrErr
}

type lineOrErr struct {
	line []byte
	err  error
}

// newStdioWire starts the reader of the server's stdout. Once stopping is
// closed, the reader goes on reading and dropping what the server writes
// until its stdout ends.
func newStdioWire(stdout io.Reader, stdin io.Writer, max int64, stopping <-chan struct{}) *stdioWire {
	w := &stdioWire{stdin: stdin, lines: make(chan lineOrErr)}
	if max > math.MaxInt32 {
		max = math.MaxInt32
	}
	lr := mcpwire.NewLineReader(stdout, int(max))
	go func() {
		for {
			line, err := lr.Next()
			if err == nil {
				if len(bytes.TrimSpace(line)) == 0 {
					continue // go-sdk skips white space between messages
				}
				err = mcpwire.CheckFraming(line)
			}
			select {
			case w.lines <- lineOrErr{mcpwire.Content(line), err}:
			case <-stopping:
				if err == nil {
					continue
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *stdioWire) send(ctx context.Context, msg []byte) error {
	line := make([]byte, 0, len(msg)+1)
	line = append(append(line, msg...), '\n')
	_, err := w.stdin.Write(line)
	return err
}

// unread returns a line the server wrote and nobody read yet, if one comes
// soon (it is called once the server has exited, when the rest of its
// stdout is at hand).
func (w *stdioWire) unread() ([]byte, bool) {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case l := <-w.lines:
		return l.line, l.err == nil
	case <-t.C:
		return nil, false
	}
}

func (w *stdioWire) recv(ctx context.Context) ([]byte, error) {
	select {
	case l := <-w.lines:
		return l.line, l.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
