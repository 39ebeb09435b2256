package verify

import (
	"context"
	"os"
	"testing"

	"github.com/mcpsign/mcpsign/internal/app/exampleserver"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// exampleServerEnv, set, makes the test binary the example MCP server on
// stdio, for the package's Example (example_test.go) to verify live.
const exampleServerEnv = "MCPSIGN_VERIFY_EXAMPLE_SERVER"

// TestMain runs the example server when asked to, else the tests, then
// removes the fixture binaries the tests built.
func TestMain(m *testing.M) {
	if os.Getenv(exampleServerEnv) == "1" {
		os.Exit(exampleserver.Main(context.Background(), nil, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	fixtures.Main(m)
}
