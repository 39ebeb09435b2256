// Command mcpsign signs and verifies what MCP servers tell models: the
// definitions of their tools, prompts and resource templates, and their
// instructions.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C cancels ctx (the server is stopped at once, what
	// was pending is answered); a second one has its default effect and
	// ends mcpsign even if a server is slow to die.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], newApp())
	stop()
	os.Exit(code)
}
