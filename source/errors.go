package source

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Stages named by a [StageError]. A list stage is named by its method:
// "tools/list", "prompts/list" or "resources/templates/list".
const (
	StageFile       = "file"       // reading or parsing a snapshot file
	StageStart      = "start"      // starting the server process, or reaching the URL
	StageInitialize = "initialize" // server/discover or the initialize handshake
)

// StageError is the error of a source that could not yield a snapshot. It
// names the stage that failed and, for a list stage, the page (from 1). The
// CLI maps it to exit code 2 (usage, input, I/O or connection error).
//
// Its message reads like `tools/list page 3: cursor "abc" repeated (cursor
// loop)` or `initialize: server exited (exit status 1) before answering;
// stderr: "…"`.
type StageError struct {
	Stage string // StageFile, StageStart, StageInitialize, or a list method
	Page  int    // page number from 1 for a list stage, else 0
	Err   error
}

// Error names the stage (and page), then the cause.
func (e *StageError) Error() string {
	if e.Page > 0 {
		return fmt.Sprintf("%s page %d: %v", e.Stage, e.Page, e.Err)
	}
	return e.Stage + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *StageError) Unwrap() error { return e.Err }

// Errors a StageError may wrap; test for them with errors.Is.
var (
	// ErrTimeout: the server did not answer within Options.Timeout.
	ErrTimeout = errors.New("timeout")
	// ErrMessageTooLarge: a message exceeded Options.MaxMessageBytes.
	ErrMessageTooLarge = mcpwire.ErrMessageTooLarge
	// ErrFileTooLarge: a snapshot file exceeded Options.MaxFileBytes.
	ErrFileTooLarge = errors.New("file too large")
	// ErrCursorLoop: a list result repeated an earlier cursor.
	ErrCursorLoop = mcpwire.ErrCursorLoop
	// ErrTooManyPages: a listing had more than Options.MaxPages pages.
	ErrTooManyPages = mcpwire.ErrTooManyPages
	// ErrListingTooLarge: the pages of a listing held more than
	// Options.MaxListingBytes bytes.
	ErrListingTooLarge = mcpwire.ErrListingTooLarge
	// ErrServerExited: the server process exited (or closed its stdout)
	// before the listing was complete. The error is an *ExitError.
	ErrServerExited = errors.New("server exited")
	// ErrProtocol: the server broke JSON-RPC or MCP (a message that does not
	// parse, a response to a request never sent, an unsupported protocol
	// version, a list result that is not one).
	ErrProtocol = mcpwire.ErrProtocol
)

// ExitError describes a stdio server that exited before the listing was
// complete: its exit status and the tail of its stderr.
type ExitError struct {
	Status string // as os.ProcessState.String(): "exit status 1", "signal: killed"; "" if still running
	Stderr string // the last bytes of its stderr, raw
}

// Error gives the exit status and the escaped tail of stderr.
func (e *ExitError) Error() string {
	msg := "server exited"
	if e.Status == "" {
		msg = "server closed its stdout"
	} else {
		msg += " (" + e.Status + ")"
	}
	msg += " before answering"
	if e.Stderr != "" {
		msg += "; stderr: " + escapeText(e.Stderr, 1024)
	} else {
		msg += "; its stderr was empty"
	}
	return msg
}

// Is makes errors.Is(err, ErrServerExited) true.
func (e *ExitError) Is(target error) bool { return target == ErrServerExited }

// RPCError is a JSON-RPC error answer from the server (mcpwire.RPCError).
type RPCError = mcpwire.RPCError

// escapeText quotes server-controlled text for a message, raw
// (textsafe.RawQuote: the edge that prints the message escapes it, once),
// and text beyond max bytes is cut from the front (the end of a stderr is
// what tells).
func escapeText(s string, max int) string {
	prefix := ""
	if len(s) > max {
		s = s[len(s)-max:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
		prefix = "…"
	}
	return prefix + textsafe.RawQuote(s)
}

// ConnectError is a request to a Streamable HTTP server that did not reach
// it: the host did not resolve, refused the connection, timed out, or
// failed the TLS handshake. Its message names the host (never the path or
// query of the URL, which may carry a token) and says what to check.
type ConnectError struct {
	Host string
	Err  error
}

func (e *ConnectError) Error() string {
	reason, todo := connectReason(e.Err)
	return "cannot reach " + textsafe.RawQuote(e.Host) + ": " + reason + " (" + todo + ")"
}

func (e *ConnectError) Unwrap() error { return e.Err }

// connectReason says in a few words why a connection failed, and what to
// check.
func connectReason(err error) (reason, todo string) {
	var (
		dns       *net.DNSError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		cert      *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &dns):
		return "the host name does not resolve", "check the host in the URL"
	case errors.As(err, &authority):
		return "its TLS certificate is signed by an unknown authority", "the server's certificate must chain to a root this system trusts"
	case errors.As(err, &hostname):
		return "its TLS certificate is for another host name", "check the host in the URL"
	case errors.As(err, &invalid):
		return "its TLS certificate is not valid (" + shortText(invalid.Error()) + ")", "the server's certificate must be renewed or fixed"
	case errors.As(err, &record):
		return "it does not answer in TLS", "check whether the URL should be http://"
	case errors.As(err, &cert):
		return "its TLS certificate does not verify", "the server's certificate must chain to a root this system trusts"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused", "check that the server is running and listens on that port"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "the connection timed out", "check the host and port, and that nothing blocks them"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return shortText(op.Err.Error()), "check the URL and that the server is running"
	}
	return shortText(err.Error()), "check the URL and that the server is running"
}

// shortText cuts an error text to one short line.
func shortText(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return textsafe.Cut(s, 200)
}
