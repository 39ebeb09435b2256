package hosts

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// AllowEntry is one entry of allowedMcpServers, the allowlist of the
// hosts' managed settings (docs/HOSTS.md, "Allowlists in managed
// settings"): GitHub Copilot's managed-settings.json and Claude Code's
// managed-settings.json take the same shape. ServerCommand matches a
// stdio server's exact argv (program, then every argument in order);
// ServerURL a remote server's URL.
type AllowEntry struct {
	ServerCommand []string `json:"serverCommand,omitempty"`
	ServerURL     string   `json:"serverUrl,omitempty"`
}

// AllowSkip is a server of the files that gets no allowlist entry, and
// why.
type AllowSkip struct {
	File, Server, Reason string
}

// Allowlist is what `mcpsign hosts allowlist` prints: the entries that
// allow exactly the servers wrap enforces, and the servers left out.
type Allowlist struct {
	AllowedMcpServers []AllowEntry `json:"allowedMcpServers"`
	// Skipped are the servers that got no entry, Notes what to check of
	// one that got one; neither is in the JSON (the caller says them).
	Skipped, Notes []AllowSkip `json:"-"`
}

// BuildAllowlist reads files and returns the allowlist entries of the
// servers in them (only those named in servers, when not empty) that are
// enforced under want (Want.Check): a stdio server wrapped to run this
// mcpsign's proxy under the policy, its wrapped argv verbatim as
// serverCommand; a remote entry wrap --front pointed at a front of
// want.Fronts, its URL as serverUrl. In file order, each once; then each
// of want.Fronts as serverUrl (a front the hosts reach by URL). A server
// that is not enforced gets no entry (an allowlist entry for it would let
// the host run it as it is), nor one whose argv carries an HTTP header
// value or a URL's user info (a secret, never printed): both are in
// Skipped with why. A front that is no URL a host may reach a front at
// (https://, or http:// on loopback; no user info, no query) is a
// *FrontError; a file that cannot be read an error.
func BuildAllowlist(ctx context.Context, files []File, servers []string, want Want) (*Allowlist, error) {
	for _, u := range want.Fronts {
		if why := checkFrontURL(u); why != "" {
			return nil, &FrontError{URL: RedactURL(u), Reason: why}
		}
	}
	al := &Allowlist{AllowedMcpServers: []AllowEntry{}}
	for _, f := range files {
		c, err := Load(ctx, f.Host, f.Path)
		if err != nil {
			return nil, err
		}
		for _, s := range c.Servers() {
			if len(servers) > 0 && !slices.Contains(servers, s.Name) {
				continue
			}
			skip := func(format string, args ...any) {
				al.Skipped = append(al.Skipped, AllowSkip{File: f.Path, Server: s.Name, Reason: fmt.Sprintf(format, args...)})
			}
			if why := want.Check(s); why != "" {
				skip("not enforced (%s): wrap it first (mcpsign hosts wrap)", why)
				continue
			}
			if s.Kind == Remote {
				// Enforced: pointed at a trusted front, a URL checkFrontURL
				// took (no user info, no query).
				al.add(AllowEntry{ServerURL: s.URL})
				continue
			}
			if why := unpinned(s.Wrapped); why != "" {
				skip("%s: an allowlist entry matches its command line in any file, whatever that entry's env or folder, so it would allow what the administrator never saw; wrap it with the absolute paths (mcpsign hosts wrap --policy /ABS/policy.json)", why)
				continue
			}
			if len(s.Argv) == 0 || !slices.Equal(redactArgv(s.Argv), s.Argv) {
				skip("its command line carries an HTTP header value or a URL's user info, which may be a secret and is never printed: write that entry by hand, or serve the server through a front (mcpsign hosts wrap --front)")
				continue
			}
			if slices.ContainsFunc(s.Argv, func(a string) bool { return strings.Contains(a, "${") }) {
				al.Notes = append(al.Notes, AllowSkip{File: f.Path, Server: s.Name,
					Reason: "its command line has host variables (${…}), written as they are: a host that expands them before it compares blocks the server (check on a device)"})
			}
			al.add(AllowEntry{ServerCommand: s.Argv})
		}
	}
	for _, u := range want.Fronts {
		al.add(AllowEntry{ServerURL: u})
	}
	return al, nil
}

// unpinned says why a wrapped command line does not name one mcpsign and
// one policy file wherever it is run, "" when it does: the host compares
// an allowlist entry with the argv only, so a bare program name (looked
// up on a PATH the entry's env can set) or a policy written with a host
// variable (${workspaceFolder}: a cloned repository's own policy) would
// let another entry with the same argv run another program or policy.
func unpinned(w *Wrapped) string {
	switch {
	case w == nil:
		return "not wrapped"
	case !filepath.IsAbs(w.Program) || strings.Contains(w.Program, "${"):
		return "its mcpsign " + textsafe.RawQuote(w.Program) + " is not an absolute path"
	case strings.Contains(w.Policy, "${") || strings.HasPrefix(w.Policy, "~") || !filepath.IsAbs(w.Policy):
		return "its policy file " + textsafe.RawQuote(w.Policy) + " is written with a host variable or is not an absolute path"
	}
	return ""
}

// FrontError is BuildAllowlist's refusal of a front URL (URL has its
// user info redacted).
type FrontError struct{ URL, Reason string }

func (e *FrontError) Error() string { return textsafe.Quote(e.URL) + ": " + e.Reason }

func (al *Allowlist) add(e AllowEntry) {
	if !slices.ContainsFunc(al.AllowedMcpServers, func(o AllowEntry) bool {
		return o.ServerURL == e.ServerURL && slices.Equal(o.ServerCommand, e.ServerCommand)
	}) {
		al.AllowedMcpServers = append(al.AllowedMcpServers, e)
	}
}

// WriteNotes writes one line per server left out and per note, every
// string from a file escaped.
func (al *Allowlist) WriteNotes(w io.Writer) {
	for _, s := range al.Skipped {
		fmt.Fprintf(w, "mcpsign: hosts allowlist: %s in %s: no entry: %s\n", textsafe.Quote(s.Server), textsafe.Escape(s.File), textsafe.Escape(s.Reason))
	}
	for _, s := range al.Notes {
		fmt.Fprintf(w, "mcpsign: hosts allowlist: %s in %s: %s\n", textsafe.Quote(s.Server), textsafe.Escape(s.File), textsafe.Escape(s.Reason))
	}
}

// NeedsAllowlist reports whether a change made the entry's command line
// another one (wrapped, re-wrapped or unwrapped): a host allowlist entry
// for its old command no longer matches it.
func (ch Change) NeedsAllowlist() bool {
	return ch.Action == ActWrapped || ch.Action == ActRewrapped || ch.Action == ActUnwrapped
}
