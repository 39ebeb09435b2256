package main

import (
	"context"
	"testing"

	"github.com/mcpsign/mcpsign/cmd/internal/proxyhint"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
)

// TestMain runs the tests (testParallel at a time), or, when re-executed
// under a fixture's name, the fixture: the servers of testdata, mcpsign
// (this package's main, without a go build) and mcpsign-proxy.
func TestMain(m *testing.M) {
	programs := []fixtures.Program{
		// mcpsign as its main runs it: the interrupts are its own.
		{Name: fixtures.ProgramMcpsign, OwnSignals: true, Main: func(_ context.Context, args []string) int {
			return runProcess(args)
		}},
		{Name: fixtures.ProgramMcpsignProxy, OwnSignals: true, Main: func(context.Context, []string) int {
			return proxycmd.LeanProcess(proxyhint.Hint)
		}},
		erasserver.Fixture(),
	}
	if !fixtures.RunsAsProgram(programs...) {
		fixtures.RaiseParallel(testParallel)
	}
	fixtures.Main(m, programs...)
}

// testParallel is how many parallel tests run at once unless -parallel
// says otherwise: most wait on processes (servers, the proxy, node) and
// their shutdown graces, so more than GOMAXPROCS (go test's default) keep
// the cores busy.
const testParallel = 8
