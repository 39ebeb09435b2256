package proxycmd

import (
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestMain runs the pollable-stdio helper (unix) or a fixture server when
// the test binary was executed as one, and the tests otherwise.
func TestMain(m *testing.M) {
	if runStdioHelper() {
		return
	}
	fixtures.Main(m)
}
