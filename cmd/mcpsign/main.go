// Command mcpsign signs and verifies what MCP servers tell models: the
// definitions of their tools, prompts and resource templates, and their
// instructions.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// A verify command sets its GOGC (verifyGCPercent) before the command
	// tree is built: building it, reading the trusted root and the bundle
	// would otherwise reach the runtime's first heap goal in about half the
	// runs, and one collection costs a one-shot verification more than the
	// time it would save (docs/PERFORMANCE.md, "One offline verification,
	// whole process").
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		debug.SetGCPercent(verifyGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C cancels ctx (the server is stopped at once, what
	// was pending is answered); a second one has its default effect and
	// ends mcpsign even if a server is slow to die.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], newApp())
	stop()
	os.Exit(code)
}
