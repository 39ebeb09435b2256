package diff

import (
	"encoding/json"
	"io"

	"github.com/mcpsign/mcpsign/internal/textout"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// WriteText writes a diff for people: the two sides (a bundle marked
// unverified), server, protocol and instruction changes, then each added,
// removed and changed definition with its field diffs, capabilities and
// breaking changes, and a summary line. Server text is escaped here, once:
// the result carries it raw (Breaking.Message too).
func WriteText(w io.Writer, d *Result) error {
	e := textout.NewWriter(w)
	for _, s := range []struct {
		name string
		side *Side
	}{{"A", d.A}, {"B", d.B}} {
		e.Printf("%s: %s (%s) · %s · protocol %s\n", s.name, textsafe.Escape(s.side.Label), s.side.Origin,
			textout.ServerName(s.side.Server.Name, s.side.Server.Version), textsafe.Escape(s.side.ProtocolVersion))
		if s.side.Unverified {
			e.Printf("   UNVERIFIED: the bundle's signature was not checked; this shows only what it claims (use mcpsign verify)\n")
		}
	}
	if d.Server != nil || d.Protocol != nil || d.Instructions != nil {
		e.Printf("\n")
	}
	if d.Server != nil {
		e.Printf("server: %s → %s\n", textout.ServerName(d.Server.Old.Name, d.Server.Old.Version), textout.ServerName(d.Server.New.Name, d.Server.New.Version))
	}
	if d.Protocol != nil {
		e.Printf("protocol: %s → %s\n", textsafe.Quote(d.Protocol.Old), textsafe.Quote(d.Protocol.New))
	}
	if ic := d.Instructions; ic != nil {
		e.Printf("instructions: %s", ic.Change)
		if ic.Diff == "" {
			e.Printf(" (%s → %s; the text is not on both sides)", orNone(ic.OldDigest), orNone(ic.NewDigest))
		}
		e.Printf("\n")
		textout.DiffLines(e, ic.Diff, "    ")
		if ic.Truncated {
			e.Printf("    … (diff truncated)\n")
		}
	}
	for _, dc := range d.Definitions {
		mark := map[ChangeKind]string{Added: "+", Removed: "-", Changed: "~"}[dc.Change]
		e.Printf("\n%s %s %s: %s\n", mark, dc.Kind, textsafe.Quote(dc.Key), dc.Change)
		if dc.Invalid != "" {
			e.Printf("    invalid: %s\n", textsafe.Escape(dc.Invalid))
		}
		if dc.NoContent {
			e.Printf("    %s → %s (a side has digests only: no field diff)\n", dc.OldDigest, dc.NewDigest)
		}
		for _, c := range dc.Fields {
			_ = c.WriteText(e, "    ")
		}
		writeCapabilityChange(e, &dc)
		for _, b := range dc.Breaking {
			e.Printf("    BREAKING %s: %s\n", b.Rule, textsafe.Escape(b.Message))
		}
	}
	e.Printf("\n%d added, %d removed, %d changed", d.Count(Added), d.Count(Removed), d.Count(Changed))
	if n := len(d.Breaking); n > 0 {
		e.Printf("; %s", textout.Plural(n, "breaking change"))
	}
	if !d.Changed() {
		e.Printf(": no differences")
	}
	e.Printf("\n")
	return e.Err()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func writeCapabilityChange(e *textout.Writer, dc *DefinitionChange) {
	switch {
	case dc.NewCapabilities != nil && dc.OldCapabilities == nil:
		e.Printf("    capabilities: %s\n", textsafe.Escape(capability.Describe(dc.NewCapabilities)))
	case dc.NewCapabilities != nil && (len(dc.GainedCapabilities) > 0 || len(dc.LostCapabilities) > 0):
		e.Printf("    capabilities: %s → %s\n", capability.Names(dc.OldCapabilities.Capabilities), textsafe.Escape(capability.Describe(dc.NewCapabilities)))
	}
}

// WriteJSON writes the diff as JSON (docs/JSON.md, docs/DRIFT.md) with
// the verdict under f, reportVersion 1.
func WriteJSON(w io.Writer, d *Result, f FailOn) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		ReportVersion int `json:"reportVersion"`
		*Result
		Changed bool   `json:"changed"`
		FailOn  FailOn `json:"failOn"`
		Failed  bool   `json:"failed"`
	}{1, d, d.Changed(), f, d.Failed(f)})
}

// WriteText writes the member change for people, its lines indented by
// indent, the member name and every diff line escaped.
func (c FieldChange) WriteText(w io.Writer, indent string) error {
	e := textout.NewWriter(w)
	label := textsafe.Escape(c.Field)
	if label == "" {
		label = "(whole definition)"
	}
	e.Printf("%s%s (%s, %s):\n", indent, label, c.Change, c.Format)
	textout.DiffLines(e, c.Diff, indent+"  ")
	if c.Truncated {
		e.Printf("%s  … (diff truncated)\n", indent)
	}
	return e.Err()
}
