// Command exampleserver is the MCP server mcpsign's tests, demo and README run
// against: "mcpsign-example" version "1.0.0", built on the official Go SDK.
// The server itself is in internal/app/exampleserver (its documentation lists
// the flags and modes), shared with the hidden command "mcpsign
// example-server" that the demo runs.
//
// Usage: exampleserver [--mode MODE] [--http ADDR [--stateless]]
// [--calls-log FILE] [--page-size N] [--drift-after DURATION] [--root DIR]
// [--protocol-versions V1,V2]; the mode may also come from
// MCPSIGN_EXAMPLE_MODE (the flag wins). Exit status 2 on a usage error, 1 on
// a failure.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpsign/mcpsign/internal/app/exampleserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := exampleserver.Main(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
