// Package sample is a test package for testsummary's own test: it passes,
// fails and skips on purpose (run only through TestRealStream).
package sample

import (
	"os"
	"testing"
)

func TestPass(t *testing.T) {}

func TestFail(t *testing.T) { t.Error("this one fails") }

func TestSkip(t *testing.T) { t.Skip("needs a thing this machine lacks") }

func TestSub(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("skipped", func(t *testing.T) { t.Skipf("sub %s", "reason") })
}

func TestPanic(t *testing.T) {
	if os.Getenv("TESTSUMMARY_PANIC") == "1" {
		panic("boom")
	}
}
