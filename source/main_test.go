package source

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
)

// programLister is the test binary as a small lister: what mcpsign digest
// does with a stdio server, up to the listing (listerMain).
const programLister = "source-lister"

// TestMain runs the fixture programs and the lister, or the tests
// (testParallel at a time), and removes the fixture links the tests made.
func TestMain(m *testing.M) {
	lister := fixtures.Program{Name: programLister, Main: func(ctx context.Context, args []string) int {
		return listerMain(ctx, args, os.Stderr)
	}}
	eras := erasserver.Fixture()
	if !fixtures.RunsAsProgram(lister, eras) {
		fixtures.RaiseParallel(testParallel)
	}
	fixtures.Main(m, lister, eras)
}

// testParallel is how many parallel tests run at once unless -parallel
// says otherwise: they mostly wait on server processes (node's start, a
// shutdown grace, a timeout), so more than GOMAXPROCS keep the cores busy.
const testParallel = 8

// listerMain lists the stdio server of args ([--max-listing-bytes N] --
// COMMAND...) with Load under the default options but the listing budget,
// as mcpsign digest does; a listing that fails is written to stderr and
// exits 2.
func listerMain(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(programLister, flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxListing := fs.Int64("max-listing-bytes", 0, "the listing budget (0: the default)")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: source-lister [--max-listing-bytes N] -- COMMAND...")
		return 1
	}
	if _, err := Load(ctx, Spec{Command: fs.Args()}, Options{MaxListingBytes: *maxListing}); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", programLister, err)
		return 2
	}
	return 0
}
