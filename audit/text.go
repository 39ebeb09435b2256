package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/internal/nofollow"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Filter selects the events a reader shows: of one server, at or after a
// time. The zero Filter selects every event.
type Filter struct {
	// Server is the server's name; "" for any.
	Server string
	// Since is the earliest time; zero for any.
	Since time.Time
}

// Match reports whether e is selected.
func (f Filter) Match(e *Event) bool {
	return (f.Server == "" || e.Server.Name == f.Server) && (f.Since.IsZero() || !e.Time.Before(f.Since))
}

// ParseSince reads a time to show events from: an RFC 3339 time, or a
// duration (such as 24h) before now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: want an RFC 3339 time or a duration such as 24h", textsafe.RawQuote(s))
	}
	return t, nil
}

// ShowOptions configure Show.
type ShowOptions struct {
	// Filter selects the events shown.
	Filter Filter
	// JSON writes each selected line as it was written (ASCII) instead of
	// for people (Record.WriteText).
	JSON bool
}

// Show writes the events of the log at path that o.Filter selects, oldest
// first, as 'mcpsign audit show' prints them. The chain is checked while
// reading (Scan): at the first broken line the events before it have been
// written, and its *LineError is returned. A symbolic link is refused
// (nofollow.ErrSymlink).
func Show(path string, w io.Writer, o ShowOptions) error {
	f, err := nofollow.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return Scan(f, func(r Record) error {
		switch {
		case !o.Filter.Match(r.Event):
			return nil
		case o.JSON:
			_, err := fmt.Fprintf(w, "%s\n", ASCII(r.Raw))
			return err
		}
		return r.WriteText(w)
	})
}

// Broken reports whether err says that a log is not trustworthy evidence:
// a line breaks a reading rule (a *LineError) or the log does not reach an
// anchor (ErrAnchor). Other errors (a file that cannot be read) say
// nothing about the log.
func Broken(err error) bool {
	return errors.As(err, new(*LineError)) || errors.Is(err, ErrAnchor)
}

// WriteText writes the event of r for people, as 'mcpsign audit show'
// prints it: every server string escaped.
func (r Record) WriteText(w io.Writer) error {
	e := r.Event
	var b strings.Builder
	fmt.Fprintf(&b, "%d  %s  %-14s %s %s\n", r.Line, e.Time.Format(time.RFC3339), e.Event, textsafe.Quote(e.Server.Name), textsafe.Quote(e.Server.Version))
	fmt.Fprintf(&b, "    lock: %s -> %s\n", orNone(e.LockBefore), orNone(e.LockAfter))
	if s := e.Sets; s != nil {
		fmt.Fprintf(&b, "    sets: tools %s, prompts %s, resourceTemplates %s\n", s.Tools, s.Prompts, s.ResourceTemplates)
	}
	if e.Instructions != "" {
		fmt.Fprintf(&b, "    instructions: %s\n", e.Instructions)
	}
	if v := e.Evidence; v != nil {
		fmt.Fprintf(&b, "    evidence: %s", textsafe.Escape(v.Method))
		for _, kv := range [][2]string{{"identity", v.Identity}, {"issuer", v.Issuer}, {"bundle", v.BundleDigest},
			{"approver", v.Approver}, {"reason", v.Reason}, {"source revision", v.SourceRevision}, {"previous lock", v.PreviousLockDigest}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, ", %s %s", kv[0], textsafe.Quote(kv[1]))
			}
		}
		if v.LogIndex != nil {
			fmt.Fprintf(&b, ", log index %d", *v.LogIndex)
		}
		b.WriteString("\n")
	}
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "    finding: %s\n", textsafe.Escape(f))
	}
	for _, c := range e.Changes {
		fmt.Fprintf(&b, "    change: %s\n", textsafe.Escape(c))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(d string) string {
	if d == "" {
		return "none"
	}
	return d
}

// WriteText writes what Check found of the log at path, as 'mcpsign audit
// verify' prints it: the events, the anchors reached (anchors, when any
// were given) and the head.
func (s Summary) WriteText(w io.Writer, path string, anchors int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "audit log %s: %d event(s), the chain verifies", textsafe.Escape(path), s.Events)
	if anchors > 0 {
		fmt.Fprintf(&b, " and reaches %d anchor(s)", anchors)
	}
	fmt.Fprintf(&b, "\nhead: %s\n", s.Head)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes what Repair did to the log at path, one line.
func (r Repaired) WriteText(w io.Writer, path string) error {
	var err error
	switch p := textsafe.Escape(path); {
	case r.Newline:
		_, err = fmt.Fprintf(w, "audit log %s: its last event had lost its newline; the newline was written back, nothing cut\n", p)
	case r.Cut > 0:
		_, err = fmt.Fprintf(w, "audit log %s: cut a partial last line (%d bytes)\n", p, r.Cut)
	default:
		_, err = fmt.Fprintf(w, "audit log %s is whole: nothing to repair\n", p)
	}
	return err
}
