package audit

import (
	"fmt"
	"io"
	"strings"
	"time"

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
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time or a duration such as 24h", s)
	}
	return t, nil
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
