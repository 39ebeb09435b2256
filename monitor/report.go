package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Reporter prints findings and run summaries, as text or as JSON lines
// (docs/JSON.md "monitor"). Its methods fit Options.OnFinding,
// WatchOptions.OnRun and WatchOptions.Reported.
type Reporter struct {
	W    io.Writer
	JSON bool
	// ReportVersion is the reportVersion of each JSON line.
	ReportVersion int
	// StatePath is named in the summaries.
	StatePath string
	// Now, when set, times each line: a text line begins with the time
	// (RFC 3339, UTC, to the second), a JSON line has it as "time". A
	// --follow sets it.
	Now func() time.Time
	err error
}

// stamp is the time of a line, "" without Now.
func (r *Reporter) stamp() string {
	if r.Now == nil {
		return ""
	}
	return r.Now().UTC().Format(time.RFC3339)
}

// Prefix is what begins a text line: the time and a space with Now, else
// nothing. For the other lines a caller prints beside the report (errors
// of a --follow).
func (r *Reporter) Prefix() string {
	if ts := r.stamp(); ts != "" {
		return ts + " "
	}
	return ""
}

// Err is the first failed write.
func (r *Reporter) Err() error { return r.err }

func (r *Reporter) note(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Finding prints one finding; server strings are escaped.
func (r *Reporter) Finding(f Finding) {
	if r.JSON {
		line := struct {
			ReportVersion int    `json:"reportVersion"`
			Time          string `json:"time,omitempty"`
			Finding
		}{r.ReportVersion, r.stamp(), f}
		r.note(json.NewEncoder(r.W).Encode(line))
		return
	}
	level := "notice"
	if f.Alert {
		level = "ALERT"
	}
	var b strings.Builder
	b.WriteString(r.Prefix())
	if f.Registry != "" {
		fmt.Fprintf(&b, "%s %s: registry %s entry %s version %s, bundle %s", level, f.Kind, textsafe.Quote(f.Registry), textsafe.Quote(f.Server), textsafe.Quote(f.Version), textsafe.Quote(f.Bundle))
	} else {
		fmt.Fprintf(&b, "%s %s: log %s index %d", level, f.Kind, textsafe.Escape(f.Log), f.LogIndex)
	}
	if f.Identity != "" {
		fmt.Fprintf(&b, ", signed by %s", textsafe.Quote(f.Identity))
		if f.Issuer != "" {
			fmt.Fprintf(&b, " (issuer %s)", textsafe.Quote(f.Issuer))
		}
	}
	if f.KeyID != "" {
		fmt.Fprintf(&b, ", signed by the key %s", f.KeyID)
	}
	if f.Digest != "" {
		fmt.Fprintf(&b, ", artifact %s", f.Digest)
	}
	if s := f.Source; s != nil {
		fmt.Fprintf(&b, ", source %s commit %s ref %s", textsafe.Quote(s.Repository), textsafe.Quote(s.Commit), textsafe.Quote(s.Ref))
	}
	if f.IntegratedTime != nil {
		fmt.Fprintf(&b, ", integrated %s", f.IntegratedTime.UTC().Format(time.RFC3339))
	}
	if f.Detail != "" {
		fmt.Fprintf(&b, ": %s", textsafe.Escape(f.Detail))
	}
	_, err := fmt.Fprintln(r.W, b.String())
	r.note(err)
}

// Summary prints what a run checked.
func (r *Reporter) Summary(res *Result) {
	if r.JSON {
		line := struct {
			ReportVersion int    `json:"reportVersion"`
			Time          string `json:"time,omitempty"`
			Kind          string `json:"kind"`
			LogIndex      uint64 `json:"logIndex"`
			Log           string `json:"log"`
			URL           string `json:"url"`
			From          uint64 `json:"from"`
			To            uint64 `json:"to"`
			Watched       int    `json:"watched"`
			Released      int    `json:"released"`
			Alerts        int    `json:"alerts"`
			Notices       int    `json:"notices"`
			State         string `json:"state"`
		}{r.ReportVersion, r.stamp(), "run", res.To, res.Log, res.URL, res.From, res.To, res.Watched, res.Released, res.Alerts, res.Notices, r.StatePath}
		r.note(json.NewEncoder(r.W).Encode(line))
		return
	}
	fmt.Fprintf(r.W, "%slog %s: checked entries %d to %d (%d entry bundles, %d hash tiles): %d by a watched signer, %d of them released; %d alerts, %d notices; state written to %s\n",
		r.Prefix(), textsafe.Escape(res.Log), res.From, res.To, res.Bundles, res.HashTiles, res.Watched, res.Released, res.Alerts, res.Notices, textsafe.Escape(r.StatePath))
}
