package hosts

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textdiff"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// EditOptions say what Edit does to a file.
type EditOptions struct {
	// Unwrap unwraps the entries; else Edit wraps them under Wrap.
	Unwrap bool
	// Wrap are the options of Config.Wrap; with Unwrap only its Servers
	// count.
	Wrap WrapOptions
	// DryRun writes nothing: the result holds the diff instead.
	DryRun bool
}

// EditResult is what Edit did, or with DryRun would do, to a file.
type EditResult struct {
	File    File
	DryRun  bool
	Changes []Change
	// Backup is the file the original was kept in (Config.Save); "" with
	// DryRun.
	Backup string
	// Diff is the unified diff of the file with DryRun, header values
	// redacted (Redact); Truncated reports that it was cut.
	Diff      string
	Truncated bool
}

// Edit wraps or unwraps the entries of f and, unless opts.DryRun, saves
// the file (atomically, with a backup beside it). A file that cannot be
// read or parsed is left untouched.
func Edit(ctx context.Context, f File, opts EditOptions) (*EditResult, error) {
	c, err := Load(ctx, f.Host, f.Path)
	if err != nil {
		return nil, fmt.Errorf("%w (file left untouched)", err)
	}
	r := &EditResult{File: f, DryRun: opts.DryRun}
	var data []byte
	if opts.Unwrap {
		data, r.Changes, err = c.Unwrap(opts.Wrap.Servers)
	} else {
		data, r.Changes, err = c.Wrap(opts.Wrap)
	}
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		if r.Backup, err = c.Save(ctx, data); err != nil {
			return nil, err
		}
		return r, nil
	}
	servers := c.Servers()
	if after, err := Parse(f.Host, f.Path, data); err == nil {
		servers = append(servers, after.Servers()...)
	}
	r.Diff, r.Truncated = textdiff.Unified(Redact(string(c.Original()), servers), Redact(string(data), servers), textdiff.Options{})
	return r, nil
}

// wouldDo is what a dry run says of an action that changes the file:
// nothing was done.
func wouldDo(a Action) (string, bool) {
	switch a {
	case ActWrapped:
		return "would wrap", true
	case ActRewrapped:
		return "would re-wrap", true
	case ActUnwrapped:
		return "would unwrap", true
	}
	return "", false
}

// WriteText writes what was done to each entry (with DryRun: what would
// be, and the diff), as 'mcpsign hosts wrap' and 'unwrap' print it, every
// string from the file escaped.
func (r *EditResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s (%s)\n", textsafe.Escape(r.File.Path), r.File.Host.Name)
	for _, ch := range r.Changes {
		action := string(ch.Action)
		if s, ok := wouldDo(ch.Action); ok && r.DryRun {
			action = s
		}
		if ch.Action == ActNotEnforced || ch.Action == ActSkipped {
			action = strings.ToUpper(action)
		}
		line := fmt.Sprintf("  %s (%s): %s", textsafe.Quote(ch.Server.Name), textsafe.Escape(ch.Server.Where), action)
		if ch.Reason != "" {
			line += ": " + textsafe.Escape(ch.Reason)
		}
		fmt.Fprintln(w, line)
	}
	if len(r.Changes) == 0 {
		fmt.Fprintln(w, "  no servers")
	}
	if !r.DryRun {
		return
	}
	if r.Diff == "" {
		fmt.Fprintln(w, "  (no change)")
		return
	}
	p := textsafe.Escape(r.File.Path)
	fmt.Fprintf(w, "--- %s\n+++ %s\n%s", p, p, textsafe.EscapeKeepLayout(r.Diff))
	if r.Truncated {
		fmt.Fprintln(w, "(diff truncated)")
	}
}
