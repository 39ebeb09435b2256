package pin

import (
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestMain removes the fixture binaries the tests built.
func TestMain(m *testing.M) { fixtures.Main(m) }
