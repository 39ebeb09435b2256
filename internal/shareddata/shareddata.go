// Package shareddata locates the project's shared public test material
// (digest and RFC 8785 vectors, Sigstore conformance cases, real public-good
// bundles), which lives beside the repository in ../shared/testdata and is
// not copied into it.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the variable that overrides where the shared test data is.
const EnvDir = "MCPSIGN_SHARED_TESTDATA"

// Dir returns the shared testdata directory, or "" when it cannot be found.
// It is $MCPSIGN_SHARED_TESTDATA when set, else shared/testdata beside the
// first ancestor of the working directory that holds go.mod.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(filepath.Dir(dir), "shared", "testdata")
			if _, err := os.Stat(d); err == nil {
				return d
			}
			return ""
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// Path returns the path of rel inside the shared testdata. When the shared
// data is missing the test is skipped, or fails when CI is set: CI must
// always run the vector tests.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared test data not found: set %s or place shared/testdata beside the repository", EnvDir)
		}
		t.Skipf("shared test data not found (set %s)", EnvDir)
	}
	return filepath.Join(d, rel)
}
