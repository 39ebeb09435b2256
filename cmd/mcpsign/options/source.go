package options

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/source/progress"
)

// SourceOptions are the flags that say how to read a SOURCE: a snapshot
// file, a stdio server command, or a Streamable HTTP URL.
type SourceOptions struct {
	// Listing holds the flags that are source.Options as they are
	// (--timeout, --shutdown-grace, --max-message-bytes,
	// --max-listing-bytes, --protocol-version) and Resources, which lists the static resources
	// too, set by the command when its resources mode is pin; Options
	// completes it.
	Listing source.Options
	Headers []string
	Verbose bool
	Quiet   bool
	// ClientCapabilities is --client-capabilities: the JSON object of client
	// capabilities announced to a live server; "" for the default.
	ClientCapabilities string
	// PolicyClientCapabilities are the policy's clientCapabilities for the
	// server (--policy --name), used when --client-capabilities is not
	// given; nil for the default.
	PolicyClientCapabilities []byte
	// OAuth are the flags of the OAuth sign-in (oauth.go).
	OAuth OAuthOptions
}

// AddFlags adds the source flags to fs.
func (o *SourceOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Listing.Timeout, "timeout", source.DefaultTimeout, "time limit for listing a live server, from start to the last page")
	AddHeaderFlag(fs, &o.Headers)
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "show the stderr of a stdio server and the progress of the listing, one line a step")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "show no progress of a live listing on stderr (no spinner at a terminal, no note of a slow server elsewhere)")
	PositiveDurationVar(fs, &o.Listing.ShutdownGrace, "shutdown-grace", source.DefaultShutdownGrace, "how long a stdio server gets to exit after its stdin closes once it is listed, and again after SIGTERM")
	fs.Int64Var(&o.Listing.MaxMessageBytes, "max-message-bytes", source.DefaultMaxMessageBytes, "largest message accepted from a server")
	fs.Int64Var(&o.Listing.MaxListingBytes, "max-listing-bytes", source.DefaultMaxListingBytes, "most bytes of a live listing, all pages of all kinds together")
	fs.StringVar(&o.ClientCapabilities, "client-capabilities", "", "the client capabilities announced to a live server, a JSON object; the default is the fullest profile (roots, sampling, elicitation form and url, tasks, and the extensions hosts announce: docs/SNAPSHOT.md), so that a lock holds the superset of what any host is shown; servers may offer other definitions to other clients, and snapshots and locks record them")
	fs.StringVar(&o.Listing.ProtocolVersion, "protocol-version", "", "force an MCP protocol version, and read that era only (default: both eras of a server that answers 2026-07-28 server/discover, the initialize handshake in a session of its own, which must serve the same: docs/DISCOVERY.md)")
	AddInsecureHTTPFlag(fs, &o.Listing.AllowInsecureHTTP)
	o.OAuth.AddFlags(fs)
}

// AddInsecureHTTPFlag adds --allow-insecure-http (docs/REMOTE.md "Plain
// http"): every command that reads a server takes it, the proxy too.
func AddInsecureHTTPFlag(fs *pflag.FlagSet, dst *bool) {
	fs.BoolVar(dst, "allow-insecure-http", false, "read a server that is not on a loopback host over plain http:// (refused by default: anyone on the way could change what it says); never with --header or --oauth")
}

// Spec returns the source named by the positional arguments: SOURCE, or the
// words after "--". It also checks --client-capabilities, so that a bad
// value is refused before anything runs.
func (o *SourceOptions) Spec(cmd *cobra.Command, args []string) (source.Spec, error) {
	if _, err := o.clientCapabilities(); err != nil {
		return source.Spec{}, err
	}
	var arg string
	var after []string
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		after = args[dash:]
		args = args[:dash]
	}
	switch len(args) {
	case 0:
	case 1:
		arg = args[0]
	default:
		return source.Spec{}, fmt.Errorf("one SOURCE expected, got %d arguments (put a server command after --, or quote it)", len(args))
	}
	return source.ParseSpec(arg, after)
}

// Options returns the source options and a function to call once the
// source was read. A live server's stderr and progress go to stderr with
// --verbose, one line a step; else, when stderr is a terminal and not
// --quiet, a spinner on stderr says what the listing waits for, and when it
// is not, one line does if the listing takes more than a few seconds
// (source/progress).
// Nothing of it ever goes to stdout.
func (o *SourceOptions) Options(stderr io.Writer, stderrIsTerminal bool) (source.Options, func(), error) {
	headers, err := mcpwire.ParseHeaders(o.Headers, os.LookupEnv)
	if err != nil {
		return source.Options{}, nil, err
	}
	opts := o.Listing
	opts.Headers = headers
	if opts.ClientCapabilities, err = o.clientCapabilities(); err != nil {
		return source.Options{}, nil, err
	}
	if opts.Timeout <= 0 {
		// 0 would silently be the default: a time limit must be one.
		return source.Options{}, nil, fmt.Errorf("--timeout %s: want a positive duration (e.g. 30s, 2m)", opts.Timeout)
	}
	if o.Verbose {
		opts.Stderr = stderr
	}
	var done func()
	opts.Progress, done = progress.For(stderr, progress.Display{Verbose: o.Verbose, Quiet: o.Quiet, Terminal: stderrIsTerminal, Limit: opts.Timeout, Setting: "--timeout"})
	return opts, done, nil
}

// clientCapabilities returns what to announce: --client-capabilities in its
// RFC 8785 form, else the policy's, else nil (the source's default).
func (o *SourceOptions) clientCapabilities() (json.RawMessage, error) {
	switch {
	case o.ClientCapabilities != "":
		caps, err := digest.CanonicalClientCapabilities([]byte(o.ClientCapabilities))
		if err != nil {
			return nil, fmt.Errorf("--client-capabilities: %w", err)
		}
		return caps, nil
	case o.PolicyClientCapabilities != nil:
		return json.RawMessage(o.PolicyClientCapabilities), nil
	}
	return nil, nil
}
