// Command badservers is a stdio "MCP server" that misbehaves in one chosen
// way, for testing how clients fail: internal/testkit/fixtures/badserver, whose
// documentation lists the behaviors.
//
// Usage: badservers --behavior NAME
package main

import (
	"os"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/badserver"
)

func main() {
	os.Exit(badserver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
