package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
)

// Defaults of [Options].
const (
	DefaultMaxMessageBytes = 16 << 20 // 16 MiB, as the source package
	DefaultCheckTimeout    = 30 * time.Second
	DefaultShutdownGrace   = 2 * time.Second
	DefaultMaxHeldBytes    = 64 << 20
	// MaxPages is the most pages the proxy reads of one kind, and the most
	// pages of one client listing it accumulates (docs/DIGEST.md: more than 1000
	// pages is an error).
	MaxPages = 1000
	// MaxInFlight is the most client requests the proxy tracks at once; a
	// client request beyond it is answered with an error by the proxy.
	MaxInFlight = 1 << 16
)

// BlockedCode is the JSON-RPC error code of every request the proxy answers
// once it has blocked a server, and BlockedMessage the error's message when
// the definitions changed.
const (
	BlockedCode    = -32001
	BlockedMessage = "blocked by mcpsign: definitions changed"
	// FirstUseMessage is the error's message when no lock was in force and
	// the first definitions were not approved (Decision.FirstUse): nothing
	// changed, nothing was approved.
	FirstUseMessage = "blocked by mcpsign: first use refused, the definitions were not approved"
	// UncheckedMessage is the error's message when the definitions could not
	// be checked (the server did not answer the listing in time, broke the
	// protocol, or the policy failed).
	UncheckedMessage = "blocked by mcpsign: definitions could not be checked"
	// InterruptedCode is the JSON-RPC error code of the requests still
	// waiting for the server when the proxy is interrupted (SIGINT,
	// SIGTERM): JSON-RPC's internal error.
	InterruptedCode = codeInternalError
)

// Policy decides whether the definitions a server serves may reach the
// client. The proxy calls Check with every snapshot it needs judged: the
// complete listing it takes itself at start-up and after every
// list_changed, and each list result the client receives (see
// [Decision]). Calls are never concurrent.
//
// A Policy may change what it approves (a signed update rolls a lock
// forward, another proxy on the same lock did so): it then allows the new
// snapshot and sets Decision.Updated. An error blocks the session, as a
// refusal does.
type Policy interface {
	Check(ctx context.Context, snap *digest.Snapshot) (*Decision, error)
}

// PolicyFunc adapts a function to the Policy interface.
type PolicyFunc func(ctx context.Context, snap *digest.Snapshot) (*Decision, error)

// Check calls f.
func (f PolicyFunc) Check(ctx context.Context, snap *digest.Snapshot) (*Decision, error) {
	return f(ctx, snap)
}

// Decision is a policy's verdict on one snapshot.
type Decision struct {
	// Allow lets the definitions through.
	Allow bool
	// Updated says the policy now approves something it did not before:
	// a lock written on first use, or rolled forward by a signed update.
	Updated bool
	// Summary is one line for people: what was compared and the outcome,
	// e.g. "definitions match lock mcp.lock (5 tools, 2 prompts, 1
	// resource template)". Raw text: the proxy escapes it.
	Summary string
	// FirstUse says the refusal is of a first use: no lock was in force,
	// and the first definitions seen were not approved (a bundle that does
	// not verify them, definitions that cannot be pinned). Nothing changed:
	// it is told so, never "definitions changed".
	FirstUse bool
	// Drift is the check against the lock the decision rests on, when it
	// shows something (a refusal's findings, a roll-forward's changes):
	// written for people before Report by WriteReport, which escapes its
	// server text once (pin.WriteReportText).
	Drift *pin.Report
	// Report is the rest of the explanation: why a change is refused or
	// what else was found, several lines. Raw text: WriteReport escapes it
	// (internal/textsafe), so a policy must not escape it itself.
	Report string
	// Findings are short identifiers of what changed, e.g.
	// "pin-tool-added tool/run_command"; they go into the data of the
	// JSON-RPC errors the proxy answers with.
	Findings []string
}

// Event is something the proxy tells its caller about while it runs.
type Event struct {
	Kind EventKind
	// Decision is the policy's verdict, for EventChecked, EventUpdated and
	// an EventBlocked caused by a refusal.
	Decision *Decision
	// Err is why the proxy blocked when the definitions could not be
	// checked.
	Err error
	// What names what was checked: "start-up listing", "tools/list result",
	// "re-listing after notifications/tools/list_changed".
	What string
}

// EventKind says what happened.
type EventKind int

// The events of a session.
const (
	// EventChecked: a listing or list result matched the policy.
	EventChecked EventKind = iota + 1
	// EventUpdated: the policy approved changed definitions (first use, or
	// a signed update) and the session goes on.
	EventUpdated
	// EventBlocked: the proxy blocked the session.
	EventBlocked
)

// ResourceMode is what the proxy does with the server's static resources
// (resources/list; docs/PROXY.md, "Static resources").
type ResourceMode string

// The resource modes, spelled as policies and flags spell them. The zero
// value means ResourcesPass.
const (
	// ResourcesPass relays resources/list and resources/read unchecked.
	ResourcesPass ResourceMode = "pass"
	// ResourcesPin lists the resources with the definitions (at start-up
	// and after list_changed) and checks every resources/list result the
	// client receives, all pages, against the policy, as definitions are;
	// a resources/read of a URI that is neither an approved resource nor
	// matched by an approved resource template is refused.
	ResourcesPin ResourceMode = "pin"
	// ResourcesHide answers resources/list itself with an empty list
	// (never asking the server), and refuses a resources/read of a URI no
	// approved resource template matches.
	ResourcesHide ResourceMode = "hide"
)

// ErrResourceMode is wrapped by the error of ResourceModeFor for a word that
// is not a resources mode.
var ErrResourceMode = errors.New("unknown resources mode")

// ResourceModeFor returns the resources mode named s ("pass", "pin",
// "hide"), or, for s "", the default (docs/POLICY.md, "resources"):
// ResourcesPin when the lock l records resources (it was written under
// pin, and stays enforced so), ResourcesPass otherwise (every lock written
// before resources could be pinned, and a first use with no lock: l nil).
func ResourceModeFor(s string, l *pin.Lock) (ResourceMode, error) {
	switch m := ResourceMode(s); m {
	case ResourcesPass, ResourcesPin, ResourcesHide:
		return m, nil
	case "":
		if l != nil && l.Resources != nil {
			return ResourcesPin, nil
		}
		return ResourcesPass, nil
	}
	return "", fmt.Errorf("%w %s (want pass, pin or hide)", ErrResourceMode, textsafe.RawQuote(s))
}

// Options configure [Run].
type Options struct {
	// Upstream is the server: exactly one of Upstream, Command and URL is
	// required. Command and URL are conveniences that build the same
	// upstreams as CommandUpstream and HTTPUpstream; HTTPClient, Header,
	// AllowInsecureHTTP, Env and Dir apply to them only (set beside
	// Upstream, they are an error: they would be ignored).
	Upstream Upstream
	// Command is the server's argv (CommandUpstream, with Env and Dir).
	Command []string
	// URL is a remote server's Streamable HTTP endpoint (https, or http on
	// a loopback address; CheckURL): the proxy is then a bridge from the
	// client's stdio to the server's HTTP, with the same checks
	// (docs/PROXY.md, "Remote servers"). HTTPUpstream, with HTTPClient,
	// Header and AllowInsecureHTTP.
	URL string
	// HTTPClient makes the requests to URL (nil: http.DefaultClient); its
	// Transport may add credentials (OAuth). Redirects are followed as
	// mcpwire.CheckRedirect says, whatever its CheckRedirect says.
	HTTPClient *http.Client
	// Header is added to every request to URL (credentials, say).
	Header http.Header
	// AllowInsecureHTTP lets URL be plain http:// to a host that is not a
	// loopback one, when Header is empty (netguard.CheckServerURL); OAuth refuses
	// it by itself (oauth.New).
	AllowInsecureHTTP bool
	// Env is added to the inherited environment of the server ("NAME=value";
	// a later entry wins). Dir is its working directory ("" is ours).
	Env []string
	Dir string
	// Policy judges the definitions. Required.
	Policy Policy
	// Resources is what happens to the server's static resources; the zero
	// value relays them unchecked (ResourcesPass). ResourceModeFor picks
	// it from a policy's choice and the lock.
	Resources ResourceMode
	// Stderr receives the server's stderr (escaped) and the report of a
	// block. Nil discards them.
	Stderr io.Writer
	// MaxMessageBytes caps one message, either way. Zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// CheckTimeout bounds each listing the proxy takes itself (at start-up,
	// after list_changed), policy check included. Zero means
	// DefaultCheckTimeout.
	CheckTimeout time.Duration
	// ShutdownGrace is how long the server gets to exit after its stdin is
	// closed, and again after SIGTERM, before SIGKILL. Zero means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// MaxHeldBytes caps the messages held while a check runs, and the data
	// queued for a peer that does not read. Zero means DefaultMaxHeldBytes.
	MaxHeldBytes int
	// ServerRequests says which requests and notifications the server
	// sends on its own (sampling, elicitation, roots, logging) may reach
	// the client; the zero value relays each one the client announced the
	// capability for (docs/PROXY.md, "What the server asks of the
	// client").
	ServerRequests ServerRequests
	// Approved, when set, is shared by the relays of one process that
	// serve many sessions (the HTTP front): relays whose approved
	// definitions are the same share one copy of them and of their index,
	// instead of one each for as long as their sessions. Nil: each relay
	// keeps its own.
	Approved *ApprovedSets
	// OnEvent, when set, is called for each check, update and block, in
	// order, on a goroutine of the proxy's own and never while the relay
	// holds its lock: a slow handler delays later events, not the session.
	// Run waits for the events queued before it returns (at most
	// ShutdownGrace); none is delivered after Run returned.
	OnEvent func(Event)
}

func (o Options) withDefaults() Options {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.MaxHeldBytes <= 0 {
		o.MaxHeldBytes = DefaultMaxHeldBytes
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	return o
}

// BlockedError is what Run returns after it blocked a session: the policy
// refused the definitions (Decision is set: the definitions changed), or
// they could not be checked (Err is set). The CLI exits 42 for the first
// and 2 for the second.
type BlockedError struct {
	// What names what was being checked.
	What string
	// Decision is the refusal, when the definitions changed.
	Decision *Decision
	// Err is why the definitions could not be checked; beside a Decision,
	// why the proxy could not list the server again before it refused
	// (a signed update might have approved the change): the refusal
	// stands.
	Err error

	subjectID []byte // the client request whose answer carried the problem
}

func (e *BlockedError) Error() string {
	if e.Decision != nil {
		msg := "blocked: definitions changed (" + e.What + ")"
		if e.Decision.FirstUse {
			msg = "blocked: first use refused (" + e.What + ")"
		}
		if e.Decision.Summary != "" {
			msg += ": " + e.Decision.Summary
		}
		if e.Err != nil {
			msg += "; " + e.Err.Error()
		}
		return msg
	}
	return fmt.Sprintf("blocked: %s could not be checked: %v", e.What, e.Err)
}

func (e *BlockedError) Unwrap() error { return e.Err }

// Drift reports whether the block was a refusal of changed definitions.
func (e *BlockedError) Drift() bool { return e.Decision != nil }

// ServerExitError is what Run returns when the server exited with a
// failure status on its own.
type ServerExitError struct {
	Status string // as os.ProcessState.String()
}

func (e *ServerExitError) Error() string { return "server exited (" + e.Status + ")" }

// Run connects to the server (Options.Upstream: a child process started
// on its stdio, a remote one, an in-process one) and relays
// newline-delimited JSON-RPC between the client (in, out) and the server,
// byte for byte, enforcing the policy:
//
//   - after the client's initialize (or server/discover, or its first
//     request under the 2026-07-28 protocol) the proxy holds the client's
//     traffic and the server's answer, lists every page of every kind of
//     definition itself (its own requests, with ids the client cannot use,
//     never forwarded), and asks the policy; only then does the answer
//     reach the client;
//   - every list result the client receives is checked, its pages
//     accumulated, before it is forwarded;
//   - every notifications/{tools,prompts,resources}/list_changed makes the
//     proxy list and check again before the notification is forwarded.
//
// On a refusal (or when the definitions cannot be checked) the proxy
// answers every held and in-flight request, and every later one, with
// JSON-RPC error BlockedCode, stops the server, writes the report to
// Options.Stderr, and returns a *BlockedError once the client closes its
// side (in reaches EOF).
//
// Run returns nil when the client closed its side or the server exited
// with status 0; a *ServerExitError when the server failed on its own; a
// *ConnectError when a remote server (Options.URL) could not be used; the
// context's error when ctx ends first. The server never outlives Run: its
// connection is stopped before Run returns.
//
// An in that is a [LineSource] is read a message at a time with NextLine
// instead of through a buffer of Run's own.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	o := opts.withDefaults()
	if o.Policy == nil {
		return errors.New("proxy: no policy given")
	}
	if o.Resources == "" {
		o.Resources = ResourcesPass
	}
	if _, err := ResourceModeFor(string(o.Resources), nil); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	up, err := upstreamOf(&o)
	if err != nil {
		return err
	}
	c, err := up.Connect(ctx, UpstreamEnv{Stderr: o.Stderr, MaxMessageBytes: o.MaxMessageBytes, Timeout: o.CheckTimeout, Grace: o.ShutdownGrace})
	if err != nil {
		return err
	}
	r := newRelay(&o, c, in, out)
	return r.run(ctx)
}

// LineSource is a client input that hands the relay whole messages: Run
// reads it only with NextLine, on the goroutine that reads the client, and
// keeps no read buffer for it (the HTTP front reads each message from its
// transport so: no pipe, no goroutine and no 4 KiB buffer between them,
// docs/PERFORMANCE.md "HTTP front"). NextLine returns one message and its
// line end ("\n"), a fresh slice the relay owns, and io.EOF when the client
// is gone; a line longer than Options.MaxMessageBytes is refused as a
// message read from a stream would be.
type LineSource interface {
	io.Reader
	NextLine() ([]byte, error)
}

// ContextLineSource is a [LineSource] whose next line can be waited for
// under a context: NextLineContext returns ctx's error, and no line, once
// ctx ends before a line came. When the upstream hands the relay its
// messages on its own readers (an HTTP upstream), Run reads such a source
// on the goroutine it runs on instead of one of its own: an idle session
// of the HTTP front holds no goroutine for its client's side
// (docs/PERFORMANCE.md, "HTTP front").
type ContextLineSource interface {
	LineSource
	NextLineContext(ctx context.Context) ([]byte, error)
}

// boundedLines reads src, refusing a line longer than max (not counting
// its line end) as mcpwire.LineReader does.
func boundedLines(src LineSource, max int) func() ([]byte, error) {
	return func() ([]byte, error) {
		line, err := src.NextLine()
		if err == nil && len(mcpwire.Content(line)) > max {
			return nil, fmt.Errorf("%w: a message has more than %d bytes", mcpwire.ErrMessageTooLarge, max)
		}
		return line, err
	}
}

// indent prefixes every line of text.
func indent(text, prefix string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix) + "\n"
}
