// Package proxycmd runs 'mcpsign proxy' from its parsed configuration. Both
// executables use it: mcpsign, which parses the command line and checks the
// flags, and mcpsign-proxy, the small executable mcpsign hands the session
// over to (exec, same process) so that a proxy that runs as long as the host
// does not carry the signing, TUF and verification code. Verification then
// runs in a short-lived 'mcpsign proxy-verify' process, only when
// definitions need approving (proxy.CommandVerifier).
package proxycmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

// Exit codes of the proxy (docs/PROXY.md).
const (
	ExitOK      = 0
	ExitError   = 2
	ExitBlocked = 42
)

// EnvConfig is the environment variable through which mcpsign hands the
// configuration to mcpsign-proxy. mcpsign-proxy removes it from its
// environment before it starts the server.
const EnvConfig = "MCPSIGN_PROXY_CONFIG"

// ExecutableName is the file name of the small proxy executable, installed
// beside mcpsign (go install .../cmd/...).
const ExecutableName = "mcpsign-proxy"

// maxConfigBytes bounds the configuration read from the environment.
const maxConfigBytes = 1 << 20

// Config is a parsed 'mcpsign proxy' command line.
type Config struct {
	// Version is the build version of the mcpsign that made the
	// configuration; mcpsign-proxy refuses one not its own (BuildVersion):
	// the two are installed and upgraded together.
	Version         string        `json:"version"`
	Lock            string        `json:"lock"`
	TOFU            bool          `json:"tofu,omitempty"`
	Quiet           bool          `json:"quiet,omitempty"`
	MaxMessageBytes int           `json:"maxMessageBytes,omitempty"`
	CheckTimeout    time.Duration `json:"checkTimeout,omitempty"`
	ShutdownGrace   time.Duration `json:"shutdownGrace,omitempty"`
	// AuditLog, when set, is the audit log (docs/AUDIT.md) the proxy
	// appends its approvals, roll-forwards and blocks to.
	AuditLog string `json:"auditLog,omitempty"`
	// ManualRollForward refuses signed updates too (--roll-forward manual).
	ManualRollForward bool `json:"manualRollForward,omitempty"`
	// Mode is the policy mode (docs/POLICY.md): "" or "block" blocks drift;
	// "warn" relays it and reports it on stderr, "audit" relays it and only
	// records it in AuditLog (required). Both record it as "warned".
	Mode string `json:"mode,omitempty"`
	// Resources is the resources mode (docs/POLICY.md, "resources"):
	// "pass", "pin", "hide", or "" for the lock's default
	// (proxy.ResourceModeFor).
	Resources string `json:"resources,omitempty"`
	// Admission, under a policy, is what mcpsign decided about the lock in
	// force before the hand-over (proxy.Admission, docs/POLICY.md "The
	// lock in force").
	Admission *proxy.Admission `json:"admission,omitempty"`
	// ServerRequests, under a policy, is what its serverRequests member
	// denies of the requests and notifications the server sends the client
	// on its own (docs/POLICY.md "serverRequests", docs/PROXY.md).
	ServerRequests proxy.ServerRequests `json:"serverRequests"`
	// AllowInsecureHTTP lets URL be plain http:// to a host that is not a
	// loopback one, without headers or OAuth (--allow-insecure-http,
	// netguard.CheckServerURL).
	AllowInsecureHTTP bool `json:"allowInsecureHttp,omitempty"`
	// Command is the server's argv; empty when URL is set.
	Command []string `json:"command"`
	// URL is a remote server's Streamable HTTP endpoint (the proxy is then
	// the bridge: docs/PROXY.md, "Remote servers").
	URL string `json:"url,omitempty"`
	// Headers are the --header arguments for URL, as given: ${VAR} is read
	// from the environment of the process that runs the proxy
	// (mcpwire.ParseHeaders), so that no value travels in the
	// configuration.
	Headers []string `json:"headers,omitempty"`
	// OAuth, when set, authorizes the requests to URL with an OAuth token
	// (docs/PROXY.md "Remote servers"): mcpsign signed in before the
	// hand-over, the proxy takes the token from the cache and refreshes it.
	// No secret travels in it.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
	// VerifyCommand, with --bundle, is the argv that verifies definitions
	// the lock does not hold (proxy.CommandVerifier): mcpsign proxy-verify
	// and the verification flags.
	VerifyCommand []string `json:"verifyCommand,omitempty"`
	// VerifyAdvertisedArg is the argument of VerifyCommand that names the
	// file of the server's advertised capabilities (proxy.CommandVerifier).
	VerifyAdvertisedArg string `json:"verifyAdvertisedArg,omitempty"`
}

// Errors of a configuration that 'mcpsign proxy' would not hand over (it
// checks its flags first, and names them); the CLIs add their hints.
var (
	ErrNoCommand     = errors.New("the configuration names no server command")
	ErrNoLockFile    = errors.New("the configuration names no lock file to enforce")
	ErrNotHandedOver = errors.New(ExecutableName + " is started by 'mcpsign proxy', not by hand")
)

// Run runs the proxy of cfg and returns the exit code: 0 when the session
// ended, 42 when changed definitions were blocked, 2 on any other error
// (printed to stderr, escaped, after "mcpsign: "). verify approves
// definitions the lock does not hold; nil leaves that to the lock and TOFU
// (in mcpsign-proxy it is built from cfg.VerifyCommand).
//
// hint, when set, gives what the CLI adds to an error (the flags that fix
// it: the proxy's library code names none), "" for nothing.
func Run(ctx context.Context, cfg *Config, verify proxy.VerifyFunc, hint Hint, stdin io.Reader, stdout, stderr io.Writer) int {
	code, err := run(ctx, cfg, verify, stdin, stdout, stderr)
	if err != nil {
		msg := textsafe.ShowError(err)
		if hint != nil {
			if h := hint(err, cfg); h != "" {
				msg += "; " + textsafe.Escape(h)
			}
		}
		fmt.Fprintf(stderr, "mcpsign: %s\n", msg)
	}
	return code
}

// Hint is what a CLI adds to the error of a session run under cfg.
type Hint func(err error, cfg *Config) string

func run(ctx context.Context, cfg *Config, verify proxy.VerifyFunc, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	opts, err := SessionOptions(ctx, cfg, verify, stderr)
	if err != nil {
		return ExitError, err
	}
	if !cfg.Quiet {
		opts.OnEvent = func(e proxy.Event) {
			if e.Kind == proxy.EventBlocked || e.Decision == nil || e.Decision.Summary == "" {
				return
			}
			fmt.Fprintf(stderr, "mcpsign proxy: %s: %s\n", textsafe.Escape(e.What), textsafe.Escape(e.Decision.Summary))
			// A signed change still deserves a person's eyes: what
			// changed, and every capability a tool gained; so does a
			// check that passed under other client capabilities than
			// the lock's (its notices). Escaped once, by WriteReport.
			_ = e.Decision.WriteReport(stderr, "  ")
		}
	}
	err = proxy.Run(ctx, stdin, stdout, opts)
	if err != nil && ctx.Err() != nil {
		// Interrupted (SIGINT, SIGTERM): the relay answered what was
		// pending and said so on stderr.
		return ExitError, nil
	}
	var blocked *proxy.BlockedError
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return ExitOK, nil
	case errors.As(err, &blocked):
		// The report is on stderr already. Drift and a protocol violation
		// exit 42 (blocked); what could not be checked otherwise (a server
		// that did not answer in time) exits 2.
		if blocked.Drift() || errors.Is(blocked.Err, mcpwire.ErrProtocol) {
			return ExitBlocked, nil
		}
		return ExitError, nil
	}
	var ce *proxy.ConnectError
	if errors.As(err, &ce) && cfg.OAuth != nil {
		if oerr := oauthError(ce); oerr != nil {
			return ExitError, oerr
		}
	}
	if errors.As(err, &ce) && cfg.OAuth != nil && (errors.Is(err, mcpwire.ErrUnauthorized) || errors.Is(err, mcpwire.ErrForbidden)) {
		return ExitError, fmt.Errorf("%w; the signed-in user may not use this server", err)
	}
	return ExitError, err
}

// SessionOptions returns the options of the relays of cfg (proxy.Run): the
// server, the lock's policy with its audit log and mode (every approval,
// roll-forward and block recorded as the proxy records them), the
// resources mode and the limits; stderr receives what the policy says
// outside the relay (mode warn). The stdio proxy runs one relay of them,
// 'mcpsign serve' one per client session (package front). OnEvent is left
// to the caller. An error names what is wrong with cfg (a lock that does
// not read is recorded in the audit log first).
func SessionOptions(ctx context.Context, cfg *Config, verify proxy.VerifyFunc, stderr io.Writer) (proxy.Options, error) {
	if len(cfg.Command) == 0 && cfg.URL == "" {
		return proxy.Options{}, ErrNoCommand
	}
	header, err := mcpwire.ParseHeaders(cfg.Headers, os.LookupEnv)
	if err != nil {
		return proxy.Options{}, err
	}
	if cfg.Lock == "" {
		return proxy.Options{}, ErrNoLockFile
	}
	httpClient, err := sessionClient(cfg, stderr)
	if err != nil {
		return proxy.Options{}, err
	}
	switch cfg.Mode {
	case "", ModeBlock, ModeWarn:
	case ModeAudit:
		if cfg.AuditLog == "" {
			return proxy.Options{}, errors.New("mode audit records drift only in the audit log: it needs an audit log")
		}
	default:
		return proxy.Options{}, fmt.Errorf("unknown mode %s (want block, warn or audit)", textsafe.RawQuote(string(cfg.Mode)))
	}
	rec := &lockRecorder{log: cfg.AuditLog}
	policy, err := proxy.NewLockPolicy(cfg.Lock, proxy.LockOptions{Verify: verify, TOFU: cfg.TOFU, ManualRollForward: cfg.ManualRollForward, Record: rec.record(), Admission: cfg.Admission})
	if err != nil {
		if le := (*pin.LockError)(nil); errors.As(err, &le) && cfg.AuditLog != "" {
			if aerr := audit.Append(ctx, cfg.AuditLog, auditevent.Refusal(audit.LockRefused, nil, nil, []string{auditevent.LockFinding(err)})); aerr != nil {
				err = errors.Join(err, fmt.Errorf("audit log: %w", aerr))
			}
		}
		return proxy.Options{}, err
	}
	resources, err := proxy.ResourceModeFor(cfg.Resources, policy.Lock())
	if err != nil {
		return proxy.Options{}, err
	}
	opts := proxy.Options{
		Resources:         resources,
		Command:           cfg.Command,
		URL:               cfg.URL,
		Header:            header,
		HTTPClient:        httpClient,
		AllowInsecureHTTP: cfg.AllowInsecureHTTP,
		ServerRequests:    cfg.ServerRequests,
		Policy:            auditPolicy(policy, rec, cfg.Mode, stderr),
		Stderr:            stderr,
		MaxMessageBytes:   cfg.MaxMessageBytes,
		CheckTimeout:      cfg.CheckTimeout,
		ShutdownGrace:     cfg.ShutdownGrace,
	}
	return opts, nil
}

// ConfigFromEnv reads the configuration mcpsign handed over and removes it
// from the environment, so that the server does not inherit it.
func ConfigFromEnv() (*Config, error) {
	data, ok := os.LookupEnv(EnvConfig)
	if !ok {
		return nil, ErrNotHandedOver
	}
	if err := os.Unsetenv(EnvConfig); err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", EnvConfig, maxConfigBytes)
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	if v := BuildVersion(); cfg.Version != v && (err == nil || cfg.Version != "") {
		// Checked first: another version's configuration may not decode.
		return nil, fmt.Errorf("%s %s was started by mcpsign %s: install both from one release (go install github.com/mcpsign/mcpsign/cmd/...@VERSION)",
			ExecutableName, v, textsafe.RawQuote(cfg.Version))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvConfig, err)
	}
	return &cfg, nil
}

// BuildVersion is the module version this executable was built from
// ("(devel)" when the build recorded none).
func BuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// withoutConfig returns env without any EnvConfig entry.
func withoutConfig(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvConfig+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// shownURL is a server URL as ps may show it: no user info, query or
// fragment, which may carry credentials.
func shownURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "URL"
	}
	return netguard.ShownURL(u)
}
