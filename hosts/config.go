// Package hosts finds the MCP configuration of hosts (Claude Desktop, Claude
// Code, VS Code, Cursor, Windsurf, Zed, Gemini CLI, Codex), lists their
// servers, and wraps each stdio server behind "mcpsign proxy" or unwraps it,
// editing the file in place and keeping its comments and layout
// (docs/HOSTS.md).
package hosts

import (
	"errors"
	"fmt"
	"slices"
)

// Kind is how a host starts or reaches a server.
type Kind string

const (
	// Stdio servers are started by the host from a command line: these are
	// what wrap puts behind the proxy.
	Stdio Kind = "stdio"
	// Remote servers are reached at a URL. They are not enforced: the proxy
	// speaks stdio only.
	Remote Kind = "remote"
	// Unknown entries have neither a command nor a URL (an extension's
	// server, for example). They are not enforced.
	Unknown Kind = "unknown"
)

// Errors of Parse, Wrap and Unwrap.
var (
	// ErrParse reports a configuration file that could not be read as its
	// host's format; the file is left untouched.
	ErrParse = errors.New("cannot parse host configuration")
	// ErrNoServer reports a server asked for by name that the file does
	// not have.
	ErrNoServer = errors.New("no such server")
	// ErrUnsupported reports an entry whose shape mcpsign cannot edit.
	ErrUnsupported = errors.New("entry cannot be edited")
)

// Server is one server entry of a configuration file.
type Server struct {
	// Name is the entry's key.
	Name string
	// Where is the path of the object that holds the entry, as in
	// "mcpServers" or `projects["/home/me/app"].mcpServers`.
	Where string
	Kind  Kind
	// Argv is the command line as written (program then arguments) for a
	// stdio entry: the wrapped one for a wrapped entry.
	Argv []string
	// URL is a remote entry's URL.
	URL string
	// Wrapped is what a wrapped entry wraps; nil when it is not wrapped.
	Wrapped *Wrapped
	// Problem says why a stdio entry cannot be edited (arguments that are
	// not strings, for example); empty when it can.
	Problem string
}

// Action is what Wrap or Unwrap did, or did not do, to one entry.
type Action string

// Actions.
const (
	ActWrapped        Action = "wrapped"
	ActUnwrapped      Action = "unwrapped"
	ActAlreadyWrapped Action = "already wrapped"
	ActNotWrapped     Action = "not wrapped"
	ActNotEnforced    Action = "not enforced"
	ActSkipped        Action = "skipped"
)

// Change is the outcome of Wrap or Unwrap for one entry.
type Change struct {
	Server Server
	Action Action
	// Reason explains ActNotEnforced and ActSkipped.
	Reason string
}

// WrapOptions are what wrap writes into each entry.
type WrapOptions struct {
	// Self is the absolute path of the mcpsign binary.
	Self string
	// Policy is the policy file's path, written as given.
	Policy string
	// Servers limits the edit to these entry names; empty means all.
	Servers []string
}

// Config is a parsed configuration file.
type Config struct {
	Host Host
	Path string
	data []byte
	doc  document
}

// document is one file format's reader and editor. Config.edit decides
// what happens to each entry; a document only makes the edit.
type document interface {
	servers() []Server
	// wrapEntry puts entry i, a stdio entry that is not wrapped and has
	// no Problem, behind the proxy: self, then prefix, then its command
	// line.
	wrapEntry(i int, self string, prefix []string)
	// unwrapEntry restores the command line of entry i, a wrapped entry;
	// it returns why it could not, or "" when it did.
	unwrapEntry(i int) (reason string)
	bytes() []byte
}

// Parse reads data, the content of the file at path, as h's configuration.
// An error wraps ErrParse and names the line.
func Parse(h Host, path string, data []byte) (*Config, error) {
	var (
		d   document
		err error
	)
	switch h.Format {
	case TOML:
		d, err = parseTOML(h, data)
	default:
		d, err = parseJSON(h, h.MapsFor(path), data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrParse, err)
	}
	return &Config{Host: h, Path: path, data: data, doc: d}, nil
}

// Servers returns the file's entries: map by map in the order of the
// host's maps (Host.MapsFor), each in file order.
func (c *Config) Servers() []Server { return c.doc.servers() }

// Original returns the bytes Parse read.
func (c *Config) Original() []byte { return c.data }

// Wrap puts every selected stdio entry behind the proxy and returns the new
// content. An entry already wrapped is left as it is; remote and unknown
// entries are reported not enforced. The Config is not changed: parse the
// result to go on.
func (c *Config) Wrap(opts WrapOptions) ([]byte, []Change, error) {
	if opts.Self == "" || opts.Policy == "" {
		return nil, nil, errors.New("wrap needs the path of mcpsign and of the policy")
	}
	return c.edit(opts.Servers, true, opts)
}

// Unwrap restores the original command line of every selected wrapped
// entry: what follows "--". It is the exact inverse of Wrap: the bytes
// Wrap changed are restored.
func (c *Config) Unwrap(servers []string) ([]byte, []Change, error) {
	return c.edit(servers, false, WrapOptions{})
}

// edit wraps (or unwraps) every entry named in names (all when empty) in a
// fresh copy of the document, and returns its bytes and what it did to each.
func (c *Config) edit(names []string, wrap bool, opts WrapOptions) ([]byte, []Change, error) {
	sel, err := c.selector(names)
	if err != nil {
		return nil, nil, err
	}
	d, err := c.fresh()
	if err != nil {
		return nil, nil, err
	}
	var out []Change
	for i, s := range d.servers() {
		if !sel(s) {
			continue
		}
		ch := Change{Server: s}
		switch ne := notEnforced(s); {
		case ne != nil:
			ch = *ne
		case wrap && s.Wrapped != nil:
			ch.Action = ActAlreadyWrapped
		case wrap:
			d.wrapEntry(i, opts.Self, wrapPrefix(opts.Policy, s.Name))
			ch.Action = ActWrapped
		case s.Wrapped == nil:
			ch.Action = ActNotWrapped
		default:
			ch.Action = ActUnwrapped
			if reason := d.unwrapEntry(i); reason != "" {
				ch.Action, ch.Reason = ActSkipped, reason
			}
		}
		out = append(out, ch)
	}
	return d.bytes(), out, nil
}

// fresh parses the original bytes again, so that edits never touch c.
func (c *Config) fresh() (document, error) {
	fc, err := Parse(c.Host, c.Path, c.data)
	if err != nil {
		return nil, err
	}
	return fc.doc, nil
}

func (c *Config) selector(names []string) (func(Server) bool, error) {
	if len(names) == 0 {
		return func(Server) bool { return true }, nil
	}
	have := map[string]bool{}
	for _, s := range c.Servers() {
		have[s.Name] = true
	}
	for _, n := range names {
		if !have[n] {
			return nil, fmt.Errorf("%s: %w %q", c.Path, ErrNoServer, n)
		}
	}
	return func(s Server) bool { return slices.Contains(names, s.Name) }, nil
}

// classify fills in the fields of s that follow from its argv.
func classify(s *Server) {
	if s.Kind != Stdio || s.Problem != "" {
		return
	}
	if w, ok := ParseWrapped(s.Argv); ok {
		s.Wrapped = &w
		return
	}
	switch {
	case s.Name == "":
		s.Problem = "the entry's name is empty"
	case len(s.Argv) == 0 || s.Argv[0] == "":
		s.Problem = "the command is empty"
	}
}

// notEnforced is the change reported for an entry wrap does not edit, or
// nil for an entry it can edit.
func notEnforced(s Server) *Change {
	switch {
	case s.Kind == Remote:
		return &Change{Server: s, Action: ActNotEnforced, Reason: "remote server: the proxy speaks stdio only"}
	case s.Kind == Unknown:
		return &Change{Server: s, Action: ActNotEnforced, Reason: "neither a command nor a URL"}
	case s.Problem != "":
		return &Change{Server: s, Action: ActSkipped, Reason: s.Problem}
	}
	return nil
}

// quoteKey writes a map key of Where.
func quoteKey(k string) string {
	bare := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			bare = false
		}
	}
	if bare {
		return "." + k
	}
	return fmt.Sprintf("[%q]", k)
}
