// Command mcpsign signs and verifies what MCP servers tell models: the
// definitions of their tools, prompts and resource templates, and their
// instructions.
package main

import (
	"context"
	"os"
	"runtime/debug"
	"sync"

	"github.com/mcpsign/mcpsign/internal/interrupt"
)

func main() {
	os.Exit(runProcess(os.Args[1:]))
}

// runProcess is mcpsign as a process: the command line args, the process's
// streams and signals; it returns the exit status.
func runProcess(args []string) int {
	// A verify command sets its GOGC (verifyGCPercent) before the command
	// tree is built: building it, reading the trusted root and the bundle
	// would otherwise reach the runtime's first heap goal in about half the
	// runs, and one collection costs a one-shot verification more than the
	// time it would save (docs/PERFORMANCE.md, "One offline verification,
	// whole process").
	if len(args) > 0 && args[0] == "verify" {
		debug.SetGCPercent(verifyGCPercent)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &interrupts{cancel: cancel}
	a := newApp()
	a.watchInterrupts = in.watch
	code := run(ctx, args, a)
	in.stop()
	return code
}

// interrupts makes the first SIGINT or SIGTERM cancel the command's
// context once watch was called: a server is stopped at once, what was
// pending is answered, a file being written is finished or removed. A
// second signal has its default effect and ends mcpsign even if a server
// is slow to die.
//
// Watching is not started for every command: the signal watcher's
// goroutine and thread, started beside a one-shot verification of files
// (which has nothing to stop or finish: Ctrl-C may end it as it ends any
// program), cost it about a tenth of its CPU time on two cores
// (docs/PERFORMANCE.md, "One offline verification, whole process").
type interrupts struct {
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	unwatch func() // nil until watch
}

func (in *interrupts) watch() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.unwatch != nil {
		return
	}
	// The cause reads "interrupted: SIGTERM received"; the next signal has
	// its default effect.
	in.unwatch = interrupt.Notify(in.cancel)
}

func (in *interrupts) stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.unwatch != nil {
		in.unwatch()
	}
	in.cancel(nil)
}
