package digest

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Report is the stable JSON form of the digests of a snapshot
// (docs/JSON.md, "mcpsign digest --format json").
type Report struct {
	ReportVersion   int                `json:"reportVersion"`
	Server          ServerInfo         `json:"server"`
	ProtocolVersion string             `json:"protocolVersion"`
	Definitions     []ReportDefinition `json:"definitions"`
	Invalid         []ReportInvalid    `json:"invalid"`
	Sets            map[string]*string `json:"sets"`
	Counts          map[string]int     `json:"counts"`
	Instructions    *string            `json:"instructions"`
}

// ReportDefinition is a definition of a Report and its digest.
type ReportDefinition struct {
	Kind   Kind   `json:"kind"`
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// ReportInvalid is a definition of a Report that has no digest, and why.
type ReportInvalid struct {
	Kind    Kind    `json:"kind"`
	Key     string  `json:"key,omitempty"`
	Index   int     `json:"index"`
	Reason  string  `json:"reason"`
	Pointer *string `json:"pointer,omitempty"`
}

// Report returns the report of r, the digests of snap.
func (r *Result) Report(snap *Snapshot) *Report {
	out := &Report{
		ReportVersion:   1,
		Server:          snap.Server,
		ProtocolVersion: snap.ProtocolVersion,
		Definitions:     []ReportDefinition{},
		Invalid:         []ReportInvalid{},
		Sets:            map[string]*string{},
		Counts:          map[string]int{},
	}
	for _, d := range r.Definitions {
		if d.Err == nil {
			out.Definitions = append(out.Definitions, ReportDefinition{d.Kind, d.Key, d.Digest})
			continue
		}
		inv := ReportInvalid{Kind: d.Kind, Key: d.Key, Index: d.Index, Reason: d.Err.Error()}
		var se *SyntaxError
		if errors.As(d.Err, &se) {
			inv.Reason = se.Reason
			inv.Pointer = &se.Pointer
		}
		out.Invalid = append(out.Invalid, inv)
	}
	for _, k := range Kinds {
		if s, ok := r.Sets[k]; ok {
			out.Sets[k.ListMember()] = &s
		} else {
			out.Sets[k.ListMember()] = nil
		}
		out.Counts[k.ListMember()] = r.Counts[k]
	}
	if r.Instructions != "" {
		out.Instructions = &r.Instructions
	}
	return out
}

// WriteText writes r, the digests of snap, as a table, as 'mcpsign digest'
// prints it: every string from the server escaped.
func (r *Result) WriteText(w io.Writer, snap *Snapshot) error {
	name := snap.Server.Name
	if name == "" {
		name = "(unnamed server)"
	}
	fmt.Fprintf(w, "%s %s", textsafe.Escape(name), textsafe.Escape(snap.Server.Version))
	if snap.ProtocolVersion != "" {
		fmt.Fprintf(w, " · protocol %s", textsafe.Escape(snap.ProtocolVersion))
	}
	fmt.Fprintf(w, " · %s\n\n", r.CountText())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tKEY\tDIGEST")
	for _, d := range r.Definitions {
		key := textsafe.Escape(d.Key)
		if d.Key == "" {
			key = fmt.Sprintf("(#%d)", d.Index)
		}
		if d.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\tINVALID: %s\n", d.Kind, key, textsafe.Escape(d.Err.Error()))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Kind, key, d.Digest)
	}
	fmt.Fprintln(tw, "\t\t")
	for _, k := range Kinds {
		set, ok := r.Sets[k]
		if !ok {
			set = "none (a definition is invalid)"
		}
		fmt.Fprintf(tw, "set\t%s\t%s\n", k.ListMember(), set)
	}
	ins := "none (the server sends no instructions)"
	if r.Instructions != "" {
		ins = r.Instructions
	}
	fmt.Fprintf(tw, "instructions\t\t%s\n", ins)
	return tw.Flush()
}
