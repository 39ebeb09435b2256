// Package exampleserver is the MCP server mcpsign's tests, demo and README run
// against: "mcpsign-example" version "1.0.0", built on the official Go SDK. It
// runs as the command testdata/exampleserver and as the hidden command
// "mcpsign example-server" (which the demo starts); both call Main.
//
// It serves five tools (delete_note, fetch_url, read_file, search_notes,
// write_note), two prompts (draft_note, summarize_notes), one resource
// template (notes://{id}) and instructions. Every definition is the same bytes
// on every run, so digests are stable. Notes live in memory.
//
// Transports: stdio (the default), or Streamable HTTP with --http ADDR, in
// which case the first line on stdout is "listening on http://HOST:PORT/mcp"
// (use --http 127.0.0.1:0 for a free port).
//
// Modes (--mode, or the MCPSIGN_EXAMPLE_MODE environment variable; the flag
// wins):
//
//	honest        the definitions above (the default)
//	rugpull       search_notes' description gains a hidden instruction (with a
//	              zero-width space and a right-to-left override) and a
//	              "sidenote" parameter, and the tool run_command appears
//	paginated     one tool, prompt or resource template per page
//	cursor-loop   tools/list always answers the first page with the same nextCursor
//	oversized     tools/list answers one message larger than 16 MiB (an extra
//	              tool, oversized_payload, with a 17 MiB description)
//	honest-probe  the first tools/list of a session (of the process, with
//	              --stateless) is honest, every later one the whole rug-pull
//	              set in one page
//	list-changed  honest until the first tools/call has been answered (or until
//	              --drift-after has passed since the first request), then the
//	              rug-pull set, announced with notifications/tools/list_changed
//
// --page-size N sets the items per list page in any mode; --root DIR is the
// directory read_file reads below (default "."); --protocol-versions V1,V2
// narrows the protocol versions offered (for example 2025-11-25 to force the
// initialize handshake over stdio); --stateless serves HTTP without sessions,
// which enables protocol 2026-07-28 over HTTP.
//
// --bundle FILE (or the MCPSIGN_EXAMPLE_BUNDLE environment variable; the
// flag wins) advertises that Sigstore bundle in the hello, as
// capabilities.extensions and capabilities.experimental
// "dev.mcpsign/attestation" {"bundle": …} (docs/DISCOVERY.md);
// --bundle-url URL [--bundle-digest sha256:HEX] advertises
// {"bundleUrl", "bundleDigest"} instead.
//
// --calls-log FILE appends one JSON line {"tool":…,"arguments":…} per
// tools/call received (the file is created at start-up), so that a test can
// prove that no call reached the server.
package exampleserver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modeEnv is the environment variable that selects the mode when --mode is
// not given.
const modeEnv = "MCPSIGN_EXAMPLE_MODE"

// bundleEnv names the bundle file to advertise when --bundle is not given.
const bundleEnv = "MCPSIGN_EXAMPLE_BUNDLE"

// attestationCapability is where the server advertises its bundle
// (docs/DISCOVERY.md).
const attestationCapability = "dev.mcpsign/attestation"

// config is the parsed command line.
type config struct {
	mode             mode
	httpAddr         string
	stateless        bool
	driftAfter       time.Duration
	callsLog         string
	pageSize         int
	root             string
	protocolVersions []string
	bundleFile       string
	bundleURL        string
	bundleDigest     string
	attestation      map[string]any // the advertised hint, if any

	stdin io.ReadCloser                    // the stdio transport's input
	logf  func(format string, args ...any) // the server's log
}

// errUsage marks a command-line error (exit status 2).
var errUsage = errors.New("usage error")

// Main runs the example server with the command line args (without the
// program name), reading MCPSIGN_EXAMPLE_MODE through getenv, serving MCP
// over stdin and stdout (or HTTP with --http, announcing the URL on
// stdout), logging to stderr, until the client goes away or ctx ends. It
// returns the exit status: 0, 1 on a failure, 2 on a usage error.
func Main(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout io.Writer, stderr io.Writer) int {
	logger := log.New(stderr, "mcpsign-example: ", 0)
	cfg, err := parseArgs(args, getenv(modeEnv), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		logger.Print(err)
		return 2
	}
	if cfg.bundleFile == "" && cfg.bundleURL == "" {
		cfg.bundleFile = getenv(bundleEnv)
	}
	if cfg.attestation, err = attestationOf(cfg); err != nil {
		logger.Print(err)
		return 2
	}
	cfg.stdin = stdin
	cfg.logf = logger.Printf
	if err := run(ctx, cfg, stdout); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// modeHelp says what each mode serves (a switch, not a map: nothing is
// built at start, scripts/bench/inittrace).
func modeHelp(m mode) string {
	switch m {
	case modeHonest:
		return "five tools, two prompts, one resource template and instructions (the default)"
	case modeRugPull:
		return "search_notes gains a hidden instruction (U+200B, U+202E) and a parameter; run_command appears"
	case modePaginated:
		return "one tool, prompt or resource template per page"
	case modeCursorLoop:
		return "tools/list always answers the first page with the same nextCursor"
	case modeOversized:
		return "tools/list answers one message larger than 16 MiB"
	case modeHonestProbe:
		return "the first tools/list of a session is honest, every later one the rug-pull set"
	case modeListChanged:
		return "honest until the first tools/call (or --drift-after), then the rug-pull set, announced with list_changed"
	}
	return ""
}

// writeUsage writes the usage text of the example server: what it is, its
// modes and its flags (as --name, the way mcpsign's flags are written).
func writeUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: mcpsign example-server [--mode MODE] [flags]

Run mcpsign's example MCP server, "%s" %s, over stdio (or
Streamable HTTP with --http ADDR): the server the demo, the tests and the
documentation run against. Its definitions are the same bytes on every run;
it runs no commands and reads files only below --root.

Modes (--mode, or $%s):
`, serverName, serverVersion, modeEnv)
	for _, m := range modes {
		fmt.Fprintf(w, "  %-13s %s\n", m, modeHelp(m))
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name == "value" {
			name = "duration" // --drift-after, the one flag.Func
		}
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(w, "  --%s%s\n        %s\n", f.Name, name, usage)
	})
}

// parseArgs parses the command line; envMode is the value of
// MCPSIGN_EXAMPLE_MODE, used when --mode is absent.
func parseArgs(args []string, envMode string, stderr io.Writer) (config, error) {
	cfg := config{mode: modeHonest}
	fs := flag.NewFlagSet("exampleserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { writeUsage(stderr, fs) }
	modeNames := make([]string, len(modes))
	for i, m := range modes {
		modeNames[i] = string(m)
	}
	modeFlag := fs.String("mode", "", "behavior: "+strings.Join(modeNames, ", ")+" (default honest, or $"+modeEnv+")")
	fs.StringVar(&cfg.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:0) instead of stdio")
	fs.BoolVar(&cfg.stateless, "stateless", false, "with --http: serve without sessions (enables protocol 2026-07-28 over HTTP)")
	fs.Func("drift-after", "list-changed mode: drift this long after the first request (a duration, or milliseconds) instead of after the first tools/call", func(s string) error {
		d, err := parseDuration(s)
		cfg.driftAfter = d
		return err
	})
	fs.StringVar(&cfg.callsLog, "calls-log", "", "append one JSON line per tools/call received to this file")
	fs.IntVar(&cfg.pageSize, "page-size", 0, "items per list page (default 1 in paginated mode, else the SDK's 1000)")
	fs.StringVar(&cfg.root, "root", ".", "directory read_file reads below")
	fs.StringVar(&cfg.bundleFile, "bundle", "", "advertise this Sigstore bundle in the hello (capabilities \""+attestationCapability+"\"; default $"+bundleEnv+")")
	fs.StringVar(&cfg.bundleURL, "bundle-url", "", "advertise this bundle URL in the hello instead")
	fs.StringVar(&cfg.bundleDigest, "bundle-digest", "", "with --bundle-url: the bundle's sha256:HEX digest to advertise")
	versions := fs.String("protocol-versions", "", "comma-separated protocol versions to offer (default all the SDK supports: "+
		strings.Join(mcp.SupportedProtocolVersions(), ",")+")")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	m := *modeFlag
	if m == "" {
		m = envMode
	}
	if m != "" {
		if !slices.Contains(modes, mode(m)) {
			return config{}, fmt.Errorf("%w: unknown mode %q (want one of %s)", errUsage, m, strings.Join(modeNames, ", "))
		}
		cfg.mode = mode(m)
	}
	if cfg.driftAfter != 0 && cfg.mode != modeListChanged {
		return config{}, fmt.Errorf("%w: --drift-after needs --mode %s", errUsage, modeListChanged)
	}
	if cfg.pageSize < 0 {
		return config{}, fmt.Errorf("%w: --page-size must not be negative", errUsage)
	}
	if cfg.pageSize == 0 && cfg.mode == modePaginated {
		cfg.pageSize = 1
	}
	if cfg.bundleFile != "" && cfg.bundleURL != "" {
		return config{}, fmt.Errorf("%w: give --bundle or --bundle-url, not both", errUsage)
	}
	if cfg.bundleDigest != "" && cfg.bundleURL == "" {
		return config{}, fmt.Errorf("%w: --bundle-digest needs --bundle-url", errUsage)
	}
	if cfg.stateless && cfg.httpAddr == "" {
		return config{}, fmt.Errorf("%w: --stateless needs --http", errUsage)
	}
	if *versions != "" {
		supported := mcp.SupportedProtocolVersions()
		for v := range strings.SplitSeq(*versions, ",") {
			v = strings.TrimSpace(v)
			if !slices.Contains(supported, v) {
				return config{}, fmt.Errorf("%w: unsupported protocol version %q (supported: %s)", errUsage, v, strings.Join(supported, ","))
			}
			cfg.protocolVersions = append(cfg.protocolVersions, v)
		}
	}
	return cfg, nil
}

// parseDuration reads a Go duration ("250ms") or a bare number of
// milliseconds ("250").
func parseDuration(s string) (time.Duration, error) {
	if ms, err := strconv.Atoi(s); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}

// newServer builds the MCP server for cfg. calls, if not nil, receives the
// calls log.
func newServer(cfg config, calls io.Writer) *mcp.Server {
	cat := newCatalog(cfg.root)
	s := mcp.NewServer(&mcp.Implementation{Name: serverName, Version: serverVersion}, &mcp.ServerOptions{
		Instructions:              instructions,
		PageSize:                  cfg.pageSize,
		SupportedProtocolVersions: cfg.protocolVersions,
		// No logging capability: the server announces exactly tools, prompts
		// and resources.
		Capabilities: capabilities(cfg),
	})
	tools := cat.honestTools()
	switch cfg.mode {
	case modeRugPull:
		tools = cat.rugPullTools()
	case modeOversized:
		tools = append(tools, cat.oversizedTool())
	}
	for _, e := range tools {
		e.add(s)
	}
	cat.addPrompts(s)
	cat.addResourceTemplates(s)
	newBehavior(cfg, cat, calls, cfg.logf).attach(s)
	return s
}

// attestationOf builds the attestation hint of cfg: the bundle file's JSON
// object, or the URL and digest; nil when there is none.
func attestationOf(cfg config) (map[string]any, error) {
	switch {
	case cfg.bundleURL != "":
		a := map[string]any{"bundleUrl": cfg.bundleURL}
		if cfg.bundleDigest != "" {
			a["bundleDigest"] = cfg.bundleDigest
		}
		return a, nil
	case cfg.bundleFile != "":
		data, err := os.ReadFile(cfg.bundleFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --bundle: %w", errUsage, err)
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("%w: --bundle %s is not JSON", errUsage, cfg.bundleFile)
		}
		return map[string]any{"bundle": json.RawMessage(data)}, nil
	}
	return nil, nil
}

// capabilities are what the server announces besides its features (which
// the SDK adds): the attestation hint in both generations' places.
func capabilities(cfg config) *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{}
	if cfg.attestation != nil {
		c.AddExtension(attestationCapability, cfg.attestation)
		c.Experimental = map[string]any{attestationCapability: cfg.attestation}
	}
	return c
}

// run serves until the client goes away (stdio) or ctx is done.
func run(ctx context.Context, cfg config, stdout io.Writer) error {
	var calls io.Writer
	if cfg.callsLog != "" {
		f, err := os.OpenFile(cfg.callsLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("opening calls log: %w", err)
		}
		defer f.Close()
		calls = f
	}
	server := newServer(cfg, calls)
	if cfg.httpAddr == "" {
		if err := server.Run(ctx, &mcp.IOTransport{Reader: cfg.stdin, Writer: nopCloser{stdout}}); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("serving stdio: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, cfg, server, stdout)
}

// nopCloser is stdout for the stdio transport, which must not close it (as
// mcp.StdioTransport does not).
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// serveHTTP serves Streamable HTTP at /mcp on cfg.httpAddr and announces the
// URL as the first line of stdout.
func serveHTTP(ctx context.Context, cfg config, server *mcp.Server, stdout io.Writer) error {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.httpAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: cfg.stateless}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(stdout, "listening on http://%s/mcp\n", ln.Addr()); err != nil {
		srv.Close()
		return fmt.Errorf("announcing the URL: %w", err)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
		// Streams held open by clients would stall a graceful shutdown.
		if err := srv.Close(); err != nil {
			return fmt.Errorf("closing HTTP server: %w", err)
		}
		return nil
	}
}
