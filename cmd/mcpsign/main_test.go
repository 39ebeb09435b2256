package main

import (
	"context"
	"testing"

	"github.com/mcpsign/mcpsign/cmd/internal/proxyhint"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestMain runs the tests, or, when re-executed under a fixture's name, the
// fixture: the servers of testdata, mcpsign (this package's main, without a
// go build) and mcpsign-proxy.
func TestMain(m *testing.M) {
	fixtures.Main(m,
		fixtures.Program{Name: fixtures.ProgramMcpsign, Main: func(ctx context.Context, args []string) int {
			return run(ctx, args, newApp())
		}},
		fixtures.Program{Name: fixtures.ProgramMcpsignProxy, Main: func(ctx context.Context, _ []string) int {
			return proxycmd.Lean(ctx, proxyhint.Hint)
		}},
	)
}
