package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Exit codes: 0 success; 1 verification failed or drift found; 2 usage,
// input, I/O or connection error (and 42, proxycmd.ExitBlocked, from the
// proxy).
const (
	exitOK     = 0
	exitFailed = 1
	exitError  = 2
)

// app is what commands need from the process: its streams and environment.
// Tests run commands in-process with their own.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// isTerminal reports whether stdin is a terminal (for prompts).
	isTerminal func() bool
	// stderrIsTerminal reports whether stderr is a terminal (for progress).
	// Nil means it is not.
	stderrIsTerminal func() bool
	// handOverProxy, when set, replaces the process with mcpsign-proxy to
	// run a proxy (see handOverProxy). Tests leave it nil: the proxy runs in
	// their process.
	handOverProxy func(cfg *proxycmd.Config, verifyArgs []string) (bool, error)
	// openURL opens an OAuth sign-in URL in a browser; nil means the
	// desktop's (oauth.OpenBrowser). Tests play the browser with it.
	openURL func(ctx context.Context, url string) error
	// watchInterrupts makes the first SIGINT or SIGTERM cancel the
	// command's context from then on (interrupts, in main.go); nil: it
	// never does (tests run commands in-process). Every command but
	// verify starts watching when it starts (run); verify unless it reads
	// only local files and writes nothing (onlyLocalFiles), and then when
	// it starts a server (loadSpec).
	watchInterrupts func()
	// httpClient fetches a bundle URL (--bundle https://…, or one a server
	// advertises); nil means the default client. Tests set one that trusts
	// their TLS server.
	httpClient *http.Client
}

func newApp() *app {
	return &app{
		stdin:            os.Stdin,
		stdout:           os.Stdout,
		stderr:           os.Stderr,
		getenv:           os.Getenv,
		isTerminal:       func() bool { return isTerminalFile(os.Stdin) },
		stderrIsTerminal: func() bool { return isTerminalFile(os.Stderr) },
		handOverProxy:    handOverProxy,
	}
}

// stderrTerminal reports whether stderr is a terminal, for progress.
func (a *app) stderrTerminal() bool {
	return a.stderrIsTerminal != nil && a.stderrIsTerminal()
}

// isTerminalFile reports whether f is a terminal: a real terminal test
// (tcgetattr), not "is a character device", which /dev/null also is.
func isTerminalFile(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// reportVersion is the reportVersion of every --format json output of the
// CLI (docs/JSON.md); verify's is verify.Report's.
const reportVersion = 1

// writeJSON writes v as the indented JSON document of a --format json
// report (docs/JSON.md).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exitError carries an exit code other than 2 out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// failed marks err as a failed verification or found drift: exit 1.
func failed(err error) error { return &exitCodeError{code: exitFailed, err: err} }

// withCode returns err with an explicit exit code.
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

// silentExit ends the command with code after it has printed its own report.
type silentExit int

func (s silentExit) Error() string { return fmt.Sprintf("exit %d", int(s)) }

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, a *app) int {
	// The command is the first word, as newRootCmd reads it.
	if len(args) == 0 || args[0] != "verify" {
		a.interruptible()
	}
	root := newRootCmd(a, args...)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cobraUsageError(err) {
		err = textsafe.WithLines(err, fmt.Sprintf("Run '%s --help' for usage.", c.CommandPath()))
	}
	var s silentExit
	if errors.As(err, &s) {
		return int(s)
	}
	code := exitError
	var ce *exitCodeError
	if errors.As(err, &ce) {
		code = ce.code
	}
	fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.ShowError(withFlagHint(err)))
	return code
}

// cobraUsageError reports whether err is cobra's refusal of a command line
// (an unknown command, a wrong number of arguments) without the hint that
// flag errors get (root.go).
func cobraUsageError(err error) bool {
	msg := err.Error()
	if strings.Contains(msg, "--help' for usage.") {
		return false
	}
	for _, p := range []string{"unknown command ", "accepts ", "requires at least ", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// interruptible makes an interrupt cancel the command's context from now
// on: before a command starts a server, connects to one or writes a file.
func (a *app) interruptible() {
	if a.watchInterrupts != nil {
		a.watchInterrupts()
	}
}
