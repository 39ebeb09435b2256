package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/mcpsign/mcpsign/internal/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Exit codes (docs/CLI.md): 0 success; 1 verification failed or drift
// found; 2 usage, input, I/O or connection error.
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
	// handOverProxy, when set, replaces the process with mcpsign-proxy to
	// run a proxy (see handOverProxy). Tests leave it nil: the proxy runs in
	// their process.
	handOverProxy func(cfg *proxycmd.Config, verifyArgs []string) (bool, error)
	// httpClient fetches a bundle URL (--bundle https://…, or one a server
	// advertises); nil means the default client. Tests set one that trusts
	// their TLS server.
	httpClient *http.Client
}

func newApp() *app {
	return &app{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
		isTerminal: func() bool {
			fi, err := os.Stdin.Stat()
			return err == nil && fi.Mode()&os.ModeCharDevice != 0
		},
		handOverProxy: handOverProxy,
	}
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
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
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
	fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.EscapeKeepLayout(err.Error()))
	return code
}
