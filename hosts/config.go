// Package hosts finds the MCP configuration of hosts (Claude Desktop, Claude
// Code, VS Code, Cursor, Windsurf, Zed, Gemini CLI, Codex), lists their
// servers, and wraps each stdio server behind "mcpsign proxy" or unwraps it,
// editing the file in place and keeping its comments and layout
// (docs/HOSTS.md).
package hosts

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Kind is how a host starts or reaches a server.
type Kind string

const (
	// Stdio servers are started by the host from a command line: these are
	// what wrap puts behind the proxy.
	Stdio Kind = "stdio"
	// Remote servers are reached at a URL. Wrap turns each into a stdio
	// entry that runs the proxy in front of the URL (docs/HOSTS.md "Remote
	// servers").
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
	// ErrSelfName reports a mcpsign executable whose file name does not
	// start with "mcpsign": an entry that runs it would not be read as
	// wrapped (docs/HOSTS.md).
	ErrSelfName = errors.New("the mcpsign executable's file name does not start with \"mcpsign\"")
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
	// Upstream is, for a remote entry that wrap --front pointed at a
	// front (mcpsign serve), the URL it had, which unwrap restores
	// (UpstreamKey); "" for any other entry.
	Upstream string
	// Headers are a remote entry's HTTP headers, in file order (and those
	// a stdio entry keeps from the remote entry wrap made it from). A
	// value may be a secret: never print one.
	Headers []Header
	// Env are the names of the entry's environment variables.
	Env []string
	// EnvFile reports an entry whose host reads more variables from a
	// file (VS Code's envFile).
	EnvFile bool
	// Wrapped is what a wrapped entry wraps; nil when it is not wrapped.
	Wrapped *Wrapped
	// Problem says why the entry cannot be edited (arguments that are not
	// strings, a remote entry whose transport the proxy does not speak, for
	// example); empty when it can.
	Problem string
	// headerArgs are the --header values wrap writes for a remote entry.
	headerArgs []string
	// frontProblem says why a remote entry cannot be pointed at a front
	// (its URL member, not its headers: the host sends those to the front
	// itself); "" when it can.
	frontProblem string
}

// Header is one HTTP header of a remote entry.
type Header struct {
	Name string
	// Value is the value as the host reads it, before the host fills in
	// its variables. It may be a secret: never print it.
	Value string
	// raw is the value as written in the file (with its escapes), for
	// Redact.
	raw string
}

// Action is what Wrap or Unwrap did, or did not do, to one entry.
type Action string

// Actions.
const (
	ActWrapped Action = "wrapped"
	// ActRewrapped is an entry that had the shape of a wrapped one but was
	// not enforced (another mcpsign, another policy, a weakening flag):
	// unwrapped to its server and wrapped again.
	ActRewrapped      Action = "re-wrapped"
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
	// Reason explains ActNotEnforced and ActSkipped, and for ActRewrapped
	// why the entry was not enforced.
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
	// IsSelf is Want.IsSelf: whether a wrapped entry's program is Self.
	// Nil means SameExecutable(Self).
	IsSelf func(program string) error
	// Admits is Want.Admits: whether Policy has rules for a server. An
	// entry it does not admit is left as it is (skipped, with why): wrapped,
	// the host could not start it.
	Admits func(name string) error
	// Front, when set, is the URL of a running front (mcpsign serve):
	// instead of putting entries behind the proxy, wrap points the one
	// remote entry of Servers at it, and keeps the URL it had for unwrap
	// (docs/HOSTS.md "Pointing an entry at a front"). Policy, Self,
	// IsSelf and Admits are not used.
	Front string
}

// UpstreamKey is the member wrap --front adds to a remote entry it points
// at a front, after its URL: the URL the entry had, as it was written,
// which unwrap puts back.
const UpstreamKey = "mcpsignUpstream"

// ErrFront reports a --front wrap that cannot be done: the front's URL is
// not one a host may reach it at, or not exactly one entry is named.
var ErrFront = errors.New("cannot point an entry at a front")

// Want returns what an entry wrapped under opts runs.
func (opts WrapOptions) Want() Want {
	return Want{Self: opts.Self, Policy: opts.Policy, IsSelf: opts.IsSelf, Admits: opts.Admits}
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
	// rewrapEntry unwraps entry i, a wrapped entry, and wraps what it
	// wrapped as wrapEntry does; it returns why it could not, or "".
	rewrapEntry(i int, self string, prefix []string) (reason string)
	// wrapRemote turns entry i, a remote entry with no Problem, into a
	// stdio entry that runs self, then prefix, then its URL; it returns
	// why it could not, or "".
	wrapRemote(i int, self string, prefix []string) (reason string)
	// unwrapEntry restores the command line of entry i, a wrapped entry;
	// it returns why it could not, or "" when it did.
	unwrapEntry(i int) (reason string)
	// frontRemote points entry i, a remote entry with no frontProblem, at
	// front: the URL becomes front's, and the URL it had is kept under
	// UpstreamKey (unless it is there already); it returns why it could
	// not, or "".
	frontRemote(i int, front string) (reason string)
	// unfrontRemote restores the URL of entry i, a remote entry with an
	// Upstream, and removes UpstreamKey; it returns why it could not, or "".
	unfrontRemote(i int) (reason string)
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

// Wrap puts every selected stdio entry behind the proxy, and every remote
// one behind the proxy in front of its URL, and returns the new content. An
// entry enforced under opts (Want.Check) is left as it is; one that has the
// shape of a wrapped entry but is not enforced is unwrapped to its server
// and wrapped again (ActRewrapped); unknown entries, and entries wrap
// cannot edit, are reported with the reason. The Config is not changed:
// parse the result to go on.
func (c *Config) Wrap(opts WrapOptions) ([]byte, []Change, error) {
	if opts.Front != "" {
		if problem := checkFrontURL(opts.Front); problem != "" {
			return nil, nil, fmt.Errorf("%w: the front's URL: %s", ErrFront, problem)
		}
		if len(opts.Servers) != 1 {
			return nil, nil, fmt.Errorf("%w: name the one server entry the front serves (a front enforces one upstream)", ErrFront)
		}
		return c.edit(opts.Servers, true, opts)
	}
	if opts.Self == "" || opts.Policy == "" {
		return nil, nil, errors.New("wrap needs the path of mcpsign and of the policy")
	}
	if !isMcpsign(opts.Self) {
		return nil, nil, fmt.Errorf("%w: %s", ErrSelfName, opts.Self)
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
	want := opts.Want()
	var out []Change
	for i, s := range d.servers() {
		if !sel(s) {
			continue
		}
		ch := Change{Server: s}
		if wrap && opts.Front != "" {
			out = append(out, frontChange(d, i, s, opts.Front))
			continue
		}
		switch ne := notEnforced(s, wrap); {
		case wrap && s.Kind == Remote && s.Upstream != "":
			ch.Action, ch.Reason = ActSkipped, "it is pointed at a front, which enforces it; unwrap it first to put it behind the proxy instead"
		case !wrap && s.Kind == Remote && s.Upstream != "":
			ch.Action = ActUnwrapped
			if reason := d.unfrontRemote(i); reason != "" {
				ch.Action, ch.Reason = ActSkipped, reason
			}
		case ne != nil:
			ch = *ne
		case wrap && s.Kind == Stdio && envProblem(s) != "":
			ch.Action, ch.Reason = ActSkipped, envProblem(s)
		case wrap && want.admits(s.Name) != "":
			ch.Action, ch.Reason = ActSkipped, want.admits(s.Name)+"; add the server to the policy, then wrap again"
			if s.Wrapped != nil {
				ch.Action = ActNotEnforced
			}
		case wrap && s.Kind == Remote:
			ch.Action = ActWrapped
			if reason := d.wrapRemote(i, opts.Self, wrapPrefix(opts.Policy, s.Name, s.headerArgs, nil)); reason != "" {
				ch.Action, ch.Reason = ActNotEnforced, "remote server; cannot be wrapped: "+reason
			}
		case wrap && s.Wrapped != nil:
			why := want.Check(s)
			if why == "" {
				ch.Action = ActAlreadyWrapped
				break
			}
			ch.Action, ch.Reason = ActRewrapped, why
			if reason := d.rewrapEntry(i, opts.Self, wrapPrefix(opts.Policy, s.Name, s.Wrapped.Headers, s.Wrapped.OAuth)); reason != "" {
				ch.Action, ch.Reason = ActSkipped, why+"; "+reason
			}
		case wrap:
			d.wrapEntry(i, opts.Self, wrapPrefix(opts.Policy, s.Name, nil, nil))
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

// frontChange points entry i, s, at the front's URL: a remote entry gets
// the front's URL and keeps its own under UpstreamKey; one already pointed
// at another front is pointed at this one (re-wrapped).
func frontChange(d document, i int, s Server, front string) Change {
	ch := Change{Server: s}
	switch {
	case s.Kind != Remote:
		ch.Action, ch.Reason = ActSkipped, "not a URL entry: a front serves hosts over HTTP; put a stdio server behind the proxy instead"
	case s.frontProblem != "":
		ch.Action, ch.Reason = ActNotEnforced, "remote server; cannot be pointed at the front: "+s.frontProblem
	case s.Upstream != "" && s.URL == front:
		ch.Action = ActAlreadyWrapped
	default:
		ch.Action = ActWrapped
		if s.Upstream != "" {
			ch.Action, ch.Reason = ActRewrapped, "it was pointed at another front"
		}
		if reason := d.frontRemote(i, front); reason != "" {
			ch.Action, ch.Reason = ActNotEnforced, "remote server; cannot be pointed at the front: "+reason
		}
	}
	return ch
}

// checkFrontURL says why u is no URL a host may reach a front at, "" when
// it is: https://, or http:// to a loopback host (a front on this
// machine: netguard's one loopback rule), no user info, no query (it would
// be printed: a front takes its tokens as headers).
func checkFrontURL(u string) string {
	if p := checkRemoteURL(u); p != "" {
		return p
	}
	p, _ := url.Parse(u)
	switch {
	case p.User != nil:
		return "it holds user info: give a front's token as a header"
	case p.RawQuery != "" || p.Fragment != "":
		return "it has a query or a fragment"
	case p.Scheme == "http" && !netguard.IsLoopbackHost(p.Hostname()):
		return "plain http:// to a host that is not loopback: a front off this machine is reached over https://"
	}
	return ""
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
			return nil, fmt.Errorf("%s: %w %s", c.Path, ErrNoServer, textsafe.RawQuote(n))
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
	case envProblem(*s) != "":
		s.Problem = envProblem(*s)
	case isRemoteOriginal(s.Argv):
		// Wrapped, it would read as a remote server wrap put behind the
		// proxy, and unwrap would make it one.
		s.Problem = "the command is a URL"
	}
}

// notEnforced is the change reported for an entry wrap (or unwrap) does not
// edit, or nil for an entry it can edit.
func notEnforced(s Server, wrap bool) *Change {
	switch {
	case s.Kind == Remote && !wrap:
		return &Change{Server: s, Action: ActNotWrapped}
	case s.Kind == Remote && s.Problem != "":
		return &Change{Server: s, Action: ActNotEnforced, Reason: "remote server; cannot be wrapped: " + s.Problem}
	case s.Kind == Remote:
		return nil
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
	return fmt.Sprintf("[%s]", textsafe.RawQuote(k))
}
