// Package sample is a test package for testsummary's own test: it passes,
// fails, skips, panics and is interrupted on purpose (run only through
// testsummary's tests).
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

// TestInterrupted is stopped as Ctrl-C stops a run: its binary gets
// SIGINT while it runs.
func TestInterrupted(t *testing.T) {
	if os.Getenv("TESTSUMMARY_INTERRUPT") != "1" {
		return
	}
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {} // the signal ends the process
}
