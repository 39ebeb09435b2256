// Command scriptserver is the scripted stdio MCP server of the proxy's
// differential tests: internal/testkit/difftest/scriptserver, whose
// documentation says what a transcript is. The tests build it without the
// race detector.
//
// Usage: MCPSIGN_DIFFTEST_SCRIPT=FILE [MCPSIGN_DIFFTEST_CALLS=FILE]
// [MCPSIGN_DIFFTEST_LOCK=FILE] scriptserver
package main

import (
	"os"

	"github.com/mcpsign/mcpsign/internal/testkit/difftest/scriptserver"
)

func main() {
	os.Exit(scriptserver.Main(os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
