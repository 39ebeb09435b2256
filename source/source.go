package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Defaults of [Options].
const (
	DefaultTimeout         = 30 * time.Second
	DefaultMaxMessageBytes = 16 << 20 // 16 MiB
	// DefaultMaxListingBytes is the budget of one live listing, all pages of
	// all kinds, as the snapshot-file cap.
	DefaultMaxListingBytes = mcpwire.DefaultMaxListingBytes
	DefaultMaxFileBytes    = 64 << 20 // 64 MiB
	DefaultShutdownGrace   = 2 * time.Second
	// MaxPages is the most pages read of one kind (docs/DIGEST.md: more than
	// 1000 pages is an error); [Options.MaxPages] can only lower it.
	MaxPages = 1000
)

// DefaultClientCapabilities is the fullest client profile, announced by
// default so that what is pinned or signed is the superset of what any host
// is shown (docs/SNAPSHOT.md, "clientCapabilities"): every client capability
// the specification defines (roots with list-changed notifications,
// sampling with context and tools, elicitation in form and url mode, tasks
// with the task-augmented sampling and elicitation requests) and the
// extensions hosts announce (the MCP Inspector 2.12's tasks and skills, and
// the MCP Apps UI extension with its resource type). Servers offer more
// definitions to clients that announce more (the official "everything"
// server adds elicitation, sampling and roots tools); a host announcing a
// part of this profile is then shown a part of the lock, which the lock's
// rule for fewer capabilities lets pass (docs/LOCK.md). It is in its
// RFC 8785 form, as snapshots and locks record it.
const DefaultClientCapabilities = `{"elicitation":{"form":{},"url":{}},` +
	`"extensions":{"io.modelcontextprotocol/skills":{},"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}},` +
	`"roots":{"listChanged":true},"sampling":{"context":{},"tools":{}},` +
	`"tasks":{"cancel":{},"list":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}}`

// Protocol versions this package speaks.
const (
	// ProtocolModern is the stateless protocol generation (SEP-2575): the
	// server/discover request, and a per-request _meta on every request.
	ProtocolModern = mcpwire.ProtocolModern
	// ProtocolLegacy is the newest version of the initialize handshake
	// generation, the one sent when falling back from server/discover.
	ProtocolLegacy = mcpwire.ProtocolLegacy
)

// Options tunes how a [Spec] is loaded. The zero value is ready to use.
type Options struct {
	// Timeout bounds the whole exchange with a live server, from start to
	// the last page (not the shutdown afterwards). Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxMessageBytes caps one message received from a live server. A larger
	// message is an error naming the stage. Zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// MaxFileBytes caps a snapshot file. Zero means DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxPages caps the pages read of one kind; a server with more pages is
	// an error. Zero, or a value above MaxPages, means MaxPages.
	MaxPages int
	// MaxListingBytes caps the bytes of every page of every kind of one
	// listing together; a server that serves more is an error wrapping
	// ErrListingTooLarge. Zero means DefaultMaxListingBytes.
	MaxListingBytes int64
	// Headers are sent with every HTTP request to a Streamable HTTP server
	// (for example Authorization). Their values never appear in errors.
	// Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version and
	// Last-Event-Id are set by the transport and may not be given; see
	// [mcpwire.ParseHeaders].
	Headers http.Header
	// HTTPClient is the base client for a Streamable HTTP server (TLS
	// settings, proxies). Nil means a plain client. Its transport is wrapped
	// to add Headers and enforce MaxMessageBytes, and redirects are followed
	// only within the same origin, so that Headers never leave it.
	HTTPClient *http.Client
	// AllowInsecureHTTP lets a Streamable HTTP server that is not on a
	// loopback host be read over plain http://, when Headers is empty
	// (netguard.CheckServerURL). Without it such a URL is an error wrapping
	// netguard.ErrInsecureURL.
	AllowInsecureHTTP bool
	// Env is added to the inherited environment of a stdio server
	// ("NAME=value" entries; a later entry wins).
	Env []string
	// Stderr receives the stderr of a stdio server as it is written (the CLI
	// sets it with --verbose). Nil discards it; the last few KiB are kept
	// either way for the error message when the server exits early.
	Stderr io.Writer
	// Progress, when set, is called before each stage: ("start", 0),
	// ("initialize", 0), then (list method, page) for each page.
	Progress func(stage string, page int)
	// ClientName and ClientVersion are the clientInfo sent to the server.
	// Empty means "mcpsign" and "devel".
	ClientName, ClientVersion string
	// ClientCapabilities is the JSON object of client capabilities announced
	// to the server. Nil means DefaultClientCapabilities, the fullest
	// profile. It must be a JSON object (read strictly; an
	// error wraps digest.ErrClientCapabilities). Servers may offer
	// different definitions to different clients (the official "everything"
	// server adds a tool for clients with roots), so signer and verifier must
	// announce the same: a live snapshot records them, in their RFC 8785
	// form, as its ClientCapabilities; a snapshot file keeps its own.
	// Whatever is announced, mcpsign answers a server's ping, answers
	// roots/list with no roots, and every other request with "method not
	// found".
	ClientCapabilities json.RawMessage
	// ProtocolVersion forces a protocol version. Empty means automatic: try
	// ProtocolModern (server/discover) and fall back to the initialize
	// handshake with ProtocolLegacy, as the go-sdk client does. ProtocolModern
	// means server/discover only; an older version means the initialize
	// handshake only, offering that version.
	ProtocolVersion string
	// ShutdownGrace is how long a stdio server gets to exit after its stdin
	// is closed, and again after SIGTERM, before SIGKILL. Zero means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Resources lists the static resources too (resources/list, every
	// page), into the snapshot's Resources: what a policy that pins them
	// checks (docs/POLICY.md, "resources"). A snapshot file must then have
	// its "resources" member (ErrNoResources). Without it a snapshot has no
	// resources, a file's being dropped: not asked for, not judged.
	Resources bool
}

// ErrNoResources is the error of Load when Options.Resources asks for the
// static resources and the snapshot file has none listed.
var ErrNoResources = errors.New("the snapshot file lists no resources (it was taken without them)")

// withDefaults returns a copy of o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxPages <= 0 || o.MaxPages > MaxPages {
		o.MaxPages = MaxPages
	}
	if o.MaxListingBytes <= 0 {
		o.MaxListingBytes = DefaultMaxListingBytes
	}
	if o.ClientName == "" {
		o.ClientName = "mcpsign"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "devel"
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.ClientCapabilities == nil {
		o.ClientCapabilities = json.RawMessage(DefaultClientCapabilities)
	}
	if o.Progress == nil {
		o.Progress = func(string, int) {}
	}
	return o
}

func (o *Options) validate() error {
	if v := o.ProtocolVersion; v != "" && v != ProtocolModern && !mcpwire.IsLegacy(v) {
		return fmt.Errorf("protocol version %s is not supported (want %s, or one of %s)",
			textsafe.RawQuote(v), ProtocolModern, strings.Join(mcpwire.LegacyVersions(), ", "))
	}
	// Strict, and in the one form snapshots record (docs/SNAPSHOT.md); the
	// error wraps digest.ErrClientCapabilities.
	caps, err := digest.CanonicalClientCapabilities(o.ClientCapabilities)
	if err != nil {
		return err
	}
	o.ClientCapabilities = caps
	return mcpwire.CheckHeaders(o.Headers)
}

// Spec says where a snapshot comes from. Exactly one field is set; build it
// with [ParseSpec], or directly.
type Spec struct {
	// File is the path of a snapshot file: an mcpsign.snapshot, or a bare
	// tools/list, prompts/list or resources/templates/list result.
	File string
	// Command is the argv of a server to start and speak to over stdio.
	Command []string
	// URL is the endpoint of a Streamable HTTP server (http or https).
	URL string
}

// ParseSpec decides what a SOURCE argument means. after holds the words
// given after "--" on the command line, if any.
//
//   - words after "--": the command of a stdio server, as given (arg must be
//     empty);
//   - an http:// or https:// URL: a Streamable HTTP server;
//   - the path of an existing file: a snapshot file (but an executable file
//     that does not start like a JSON object, named by a path with a slash,
//     is a server to run: "./server");
//   - anything else: a command line, split like a POSIX shell would (see
//     [SplitCommand]) but never run through one. A single word ending in
//     .json that names no file is reported as a missing snapshot file.
//
// ParseSpec looks at the file system (whether arg names a file) but starts
// nothing and opens no connection.
func ParseSpec(arg string, after []string) (Spec, error) {
	if len(after) > 0 {
		if arg != "" {
			return Spec{}, fmt.Errorf("give either SOURCE or a command after --, not both (SOURCE is %s)", textsafe.RawQuote(arg))
		}
		return Spec{Command: append([]string(nil), after...)}, nil
	}
	if strings.TrimSpace(arg) == "" {
		return Spec{}, errors.New("no SOURCE given: a snapshot file, a command line, an http(s):// URL, or -- CMD ARGS")
	}
	if scheme, _, ok := strings.Cut(arg, "://"); ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		u, err := url.Parse(arg)
		if err != nil {
			return Spec{}, fmt.Errorf("SOURCE URL: %w", err)
		}
		if u.Host == "" {
			return Spec{}, fmt.Errorf("SOURCE URL %s has no host", textsafe.RawQuote(netguard.ShownURL(u)))
		}
		return Spec{URL: arg}, nil
	}
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			return Spec{}, fmt.Errorf("SOURCE %s is a directory, not a snapshot file or a command", textsafe.RawQuote(arg))
		}
		switch {
		case !runnable(arg, fi):
			return Spec{File: arg}, nil
		case strings.ContainsRune(arg, filepath.Separator) || strings.ContainsRune(arg, '/'):
			// A program named by its path, spaces and all.
			return Spec{Command: []string{arg}}, nil
		}
		// A bare name is looked up in PATH, as a shell would.
	}
	words, err := SplitCommand(arg)
	if err != nil {
		return Spec{}, fmt.Errorf("SOURCE command line: %w", err)
	}
	if len(words) == 1 && strings.EqualFold(filepath.Ext(words[0]), ".json") {
		// Surely meant as a snapshot file: say so instead of failing to start it.
		return Spec{}, fmt.Errorf("snapshot file %s: %w", textsafe.RawQuote(words[0]), os.ErrNotExist)
	}
	return Spec{Command: words}, nil
}

// runnable reports whether an existing file named as SOURCE is a server
// program rather than a snapshot: it is executable and does not start like a
// JSON object. (An executable bit alone is not enough: some file systems
// mark every file executable.)
func runnable(path string, fi os.FileInfo) bool {
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = bytes.TrimLeft(head[:n], " \t\r\n\ufeff")
	return len(head) == 0 || head[0] != '{'
}

// String describes the spec for messages. A URL is shown without user
// info, query or fragment (netguard.ShownURL).
func (s Spec) String() string {
	switch {
	case s.File != "":
		return "snapshot file " + s.File
	case len(s.Command) > 0:
		return "command " + QuoteCommand(s.Command)
	case s.URL != "":
		if u, err := url.Parse(s.URL); err == nil {
			return "URL " + netguard.ShownURL(u)
		}
		return "URL (unparsable)"
	}
	return "empty source"
}

// ShownURL is the spec's URL as it may be shown (netguard.ShownURL: without
// user info, query or fragment, which may carry a credential); "(URL)"
// when it does not parse, "" for a spec that names no URL.
func (s Spec) ShownURL() string {
	if s.URL == "" {
		return ""
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "(URL)"
	}
	return netguard.ShownURL(u)
}

// Load gets the snapshot that spec names: it reads a snapshot file, or
// starts a stdio server or connects to a Streamable HTTP server, lists every
// page of every kind of definition the server announces, and shuts it down.
//
// A live server is listed under every protocol version a client may
// speak, each in a session of its own (both eras of a server that answers
// server/discover, and every version of the initialize handshake), unless
// Options.ProtocolVersion forces one: when two serve different definitions
// or instructions the error wraps an *EraError (ErrErasDiffer), and no
// snapshot is returned (docs/DISCOVERY.md, "Both eras").
//
// Every error from a live server is a *StageError; a snapshot file's errors
// are a *StageError with Stage "file". A server process never outlives Load.
func Load(ctx context.Context, spec Spec, opts Options) (*digest.Snapshot, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	set := 0
	for _, b := range []bool{spec.File != "", len(spec.Command) > 0, spec.URL != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("source spec must name exactly one of a file, a command or a URL (%d given)", set)
	}
	switch {
	case spec.File != "":
		return loadFile(spec.File, &o)
	case len(spec.Command) > 0:
		return loadEras(ctx, &o, func(ctx context.Context, o *Options) (*digest.Snapshot, error) {
			return loadStdio(ctx, spec.Command, o)
		})
	default:
		return loadEras(ctx, &o, func(ctx context.Context, o *Options) (*digest.Snapshot, error) { return loadHTTP(ctx, spec.URL, o) })
	}
}

// loadFile reads a snapshot file, size-capped, and parses it with
// digest.ParseSnapshot, the one reader of snapshot files.
func loadFile(path string, o *Options) (*digest.Snapshot, error) {
	data, err := boundedfile.Read(path, o.MaxFileBytes, ErrFileTooLarge)
	if err != nil {
		return nil, &StageError{Stage: StageFile, Err: err}
	}
	snap, err := digest.ParseSnapshot(data)
	if err != nil {
		return nil, &StageError{Stage: StageFile, Err: fmt.Errorf("%s: %w", path, err)}
	}
	switch {
	case !o.Resources:
		snap.Resources = nil
	case snap.Resources == nil:
		return nil, &StageError{Stage: StageFile, Err: fmt.Errorf("%s: %w", path, ErrNoResources)}
	}
	return snap, nil
}
