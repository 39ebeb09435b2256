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
	code := run(ctx, os.Args[1:], newApp())
	stop()
	os.Exit(code)
}
