// Package shareddata locates the public test vectors the tests read (digest
// and RFC 8785 vectors, Sigstore conformance cases, real public-good
// bundles and trusted roots, in-toto statements). They live in the
// repository's testdata/ directory; testdata/SOURCES.md says where each set
// comes from, its version and its licence.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the repository's testdata directory (beside the first
// ancestor of the working directory that holds go.mod), or "" when it
// cannot be found.
func Dir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata")
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// Path returns the path of rel inside the repository's testdata. A missing
// file fails the test: the vectors are part of the repository, so a test
// that cannot read them never skips.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Fatal("testdata not found: no go.mod above the working directory")
	}
	p := filepath.Join(d, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test vectors missing from testdata/ (see testdata/SOURCES.md): %v", err)
	}
	return p
}
