package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// The writers below turn reports and diffs into text for people, Markdown
// for a CI job summary, or JSON for machines (docs/DRIFT.md, docs/JSON.md).
// Every server-provided string is escaped for text and Markdown (control,
// bidirectional and invisible characters); JSON keeps it raw, as JSON
// escaping is unambiguous.

// errWriter keeps the first write error so that the writers stay readable.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// describeApproval says how a lock was approved, for people.
func describeApproval(a *Approval) string {
	at := a.ApprovedAt.UTC().Format(time.RFC3339)
	switch a.Method {
	case MethodTOFU:
		return "trusted on first use (tofu, no signature) at " + at
	case MethodManual:
		return ManualText(a) + ", at " + at
	case evidence.MethodKey:
		return fmt.Sprintf("signed with key %s, approved at %s", textsafe.Escape(a.Identity), at)
	default:
		s := fmt.Sprintf("signed by %s", textsafe.Quote(a.Identity))
		if a.Issuer != "" {
			s += " (issuer " + textsafe.Quote(a.Issuer) + ")"
		}
		s += fmt.Sprintf(" via %s, approved at %s", a.Method, at)
		if a.Tlog != nil {
			s += fmt.Sprintf(", log index %d", a.Tlog.LogIndex)
		}
		return s
	}
}

// ManualText describes a manual approval for people: who approved it and
// why (escaped), and the source revision reviewed, if any.
func ManualText(a *Approval) string {
	s := fmt.Sprintf("approved manually by %s (no signature): %s", textsafe.Quote(a.Approver), textsafe.Quote(a.Reason))
	if a.SourceRevision != "" {
		s += ", source revision " + textsafe.Quote(a.SourceRevision)
	}
	return s
}

func serverName(s digest.ServerInfo) string {
	name := textsafe.Escape(s.Name)
	if name == "" {
		name = "(unnamed server)"
	}
	if s.Version != "" {
		name += " " + textsafe.Escape(s.Version)
	}
	return name
}

// WriteReportText writes a drift report for people: the lock and its
// approval, then every finding with its field diffs, server text escaped.
func WriteReportText(w io.Writer, r *Report) error {
	e := &errWriter{w: w}
	if n := otherServer(r); n != "" {
		e.printf("%s\n", n)
	}
	if r.Lock != "" {
		e.printf("lock:   %s\n", textsafe.Escape(r.Lock))
	}
	if r.Approval != nil {
		e.printf("pinned: %s, %s\n", serverName(r.Locked), describeApproval(r.Approval))
		e.printf("server: %s · %s\n", serverName(r.Observed), countText(r.Counts))
	}
	errs := r.Errors()
	if errs == 0 {
		e.printf("\nOK: the server matches the lock")
		if n := len(r.Findings); n > 0 {
			e.printf(" (%s)", plural(n, "notice"))
		}
		e.printf("\n")
	} else {
		e.printf("\nDRIFT: %s, %s\n", plural(errs, "error"), plural(len(r.Findings)-errs, "notice"))
	}
	for _, f := range r.Findings {
		e.printf("\n%-5s  %s  %s\n", f.Severity, f.Rule, f.Message)
		for _, c := range f.Changes {
			writeFieldChange(e, c, "    ")
		}
		if f.Diff != "" {
			e.printf("    instructions:\n")
			writeDiffLines(e, f.Diff, "      ")
		}
	}
	return e.err
}

func writeFieldChange(e *errWriter, c FieldChange, indent string) {
	label := textsafe.Escape(c.Field)
	if label == "" {
		label = "(whole definition)"
	}
	e.printf("%s%s (%s, %s):\n", indent, label, c.Change, c.Format)
	writeDiffLines(e, c.Diff, indent+"  ")
	if c.Truncated {
		e.printf("%s  … (diff truncated)\n", indent)
	}
}

// writeDiffLines writes a unified diff, each line indented and escaped.
func writeDiffLines(e *errWriter, diff, indent string) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		e.printf("%s%s\n", indent, textsafe.EscapeKeepLayout(strings.TrimSuffix(line, "\n")))
	}
}

// WriteReportMarkdown writes a drift report as GitHub-flavored Markdown (for
// $GITHUB_STEP_SUMMARY): a verdict, a table of findings, and the diffs in
// fenced blocks. Server text is escaped for the terminal and for Markdown.
func WriteReportMarkdown(w io.Writer, r *Report, f FailOn) error {
	e := &errWriter{w: w}
	verdict := "✅ no drift"
	if r.Approval == nil {
		verdict = "❌ the lock was refused"
	} else if n := r.Errors(); n > 0 {
		verdict = "❌ drift: " + plural(n, "error")
		if !r.Failed(f) {
			verdict += fmt.Sprintf(" (not failing: the threshold is %s)", f)
		}
	}
	e.printf("### mcpsign verify-pin: %s\n\n", verdict)
	if n := otherServer(r); n != "" {
		e.printf("**%s**\n\n", mdText(n))
	}
	if r.Lock != "" {
		e.printf("- Lock: %s\n", mdText(r.Lock))
	}
	if r.Approval != nil {
		e.printf("- Pinned: %s, %s\n", mdText(serverName(r.Locked)), mdText(describeApproval(r.Approval)))
		e.printf("- Server: %s · %s\n", mdText(serverName(r.Observed)), countText(r.Counts))
	}
	if len(r.Findings) == 0 {
		return e.err
	}
	e.printf("\n| Severity | Rule | Message |\n|---|---|---|\n")
	for _, fd := range r.Findings {
		e.printf("| %s | `%s` | %s |\n", fd.Severity, fd.Rule, mdCell(fd.Message))
	}
	for _, fd := range r.Findings {
		var b strings.Builder
		for _, c := range fd.Changes {
			fmt.Fprintf(&b, "# %s (%s, %s)\n", textsafe.Escape(c.Field), c.Change, c.Format)
			for _, line := range strings.Split(strings.TrimSuffix(c.Diff, "\n"), "\n") {
				b.WriteString(textsafe.EscapeKeepLayout(line) + "\n")
			}
		}
		if fd.Diff != "" {
			b.WriteString("# instructions\n")
			for _, line := range strings.Split(strings.TrimSuffix(fd.Diff, "\n"), "\n") {
				b.WriteString(textsafe.EscapeKeepLayout(line) + "\n")
			}
		}
		if b.Len() == 0 {
			continue
		}
		fence := mdFence(b.String())
		e.printf("\n<details><summary>%s</summary>\n\n%sdiff\n%s%s\n\n</details>\n",
			mdCell(fd.Rule+": "+string(fd.Kind)+" "+textsafe.Quote(fd.Key)), fence, b.String(), fence)
	}
	return e.err
}

// mdText escapes text for Markdown prose: control and invisible
// characters (textsafe), HTML, and the characters that start Markdown
// syntax, in one pass.
func mdText(s string) string {
	return mdEscaper.Replace(textsafe.Escape(s))
}

var mdEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "`", "&#96;", "@", "&#64;",
	`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "|", `\|`, "#", `\#`, "~", `\~`,
)

// mdCell is mdText for a table cell (also no line breaks).
func mdCell(s string) string {
	return mdText(strings.ReplaceAll(s, "\n", " "))
}

// mdFence returns a backtick fence longer than any run of backticks in s.
func mdFence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// ReportJSON is the stable JSON form of verify-pin (docs/DRIFT.md).
type ReportJSON struct {
	// ReportVersion is 1 (docs/JSON.md).
	ReportVersion int `json:"reportVersion"`
	*Report
	FailOn FailOn `json:"failOn"`
	Failed bool   `json:"failed"`
	Errors int    `json:"errors"`
}

// WriteReportJSON writes the report as JSON with the verdict under f.
func WriteReportJSON(w io.Writer, r *Report, f FailOn) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ReportJSON{ReportVersion: 1, Report: r, FailOn: f, Failed: r.Failed(f), Errors: r.Errors()})
}

// WriteDiffText writes a diff for people: the two sides (a bundle marked
// unverified), server, protocol and instruction changes, then each added,
// removed and changed definition with its field diffs, capabilities and
// breaking changes, and a summary line.
func WriteDiffText(w io.Writer, d *DiffResult) error {
	e := &errWriter{w: w}
	for _, s := range []struct {
		name string
		side *Side
	}{{"A", d.A}, {"B", d.B}} {
		e.printf("%s: %s (%s) · %s · protocol %s\n", s.name, textsafe.Escape(s.side.Label), s.side.Origin,
			serverName(s.side.Server), textsafe.Escape(s.side.ProtocolVersion))
		if s.side.Unverified {
			e.printf("   UNVERIFIED: the bundle's signature was not checked; this shows only what it claims (use mcpsign verify)\n")
		}
	}
	if d.Server != nil || d.Protocol != nil || d.Instructions != nil {
		e.printf("\n")
	}
	if d.Server != nil {
		e.printf("server: %s → %s\n", serverName(d.Server.Old), serverName(d.Server.New))
	}
	if d.Protocol != nil {
		e.printf("protocol: %s → %s\n", textsafe.Quote(d.Protocol.Old), textsafe.Quote(d.Protocol.New))
	}
	if ic := d.Instructions; ic != nil {
		e.printf("instructions: %s", ic.Change)
		if ic.Diff == "" {
			e.printf(" (%s → %s; the text is not on both sides)", orNone(ic.OldDigest), orNone(ic.NewDigest))
		}
		e.printf("\n")
		writeDiffLines(e, ic.Diff, "    ")
		if ic.Truncated {
			e.printf("    … (diff truncated)\n")
		}
	}
	for _, dc := range d.Definitions {
		mark := map[ChangeKind]string{Added: "+", Removed: "-", Changed: "~"}[dc.Change]
		e.printf("\n%s %s %s: %s\n", mark, dc.Kind, textsafe.Quote(dc.Key), dc.Change)
		if dc.Invalid != "" {
			e.printf("    invalid: %s\n", textsafe.Escape(dc.Invalid))
		}
		if dc.NoContent {
			e.printf("    %s → %s (a side has digests only: no field diff)\n", dc.OldDigest, dc.NewDigest)
		}
		for _, c := range dc.Fields {
			writeFieldChange(e, c, "    ")
		}
		writeCapabilityChange(e, &dc)
		for _, b := range dc.Breaking {
			e.printf("    BREAKING %s: %s\n", b.Rule, b.Message)
		}
	}
	e.printf("\n%d added, %d removed, %d changed", d.Count(Added), d.Count(Removed), d.Count(Changed))
	if n := len(d.Breaking); n > 0 {
		e.printf("; %s", plural(n, "breaking change"))
	}
	if !d.Changed() {
		e.printf(": no differences")
	}
	e.printf("\n")
	return e.err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func writeCapabilityChange(e *errWriter, dc *DefinitionChange) {
	switch {
	case dc.NewCapabilities != nil && dc.OldCapabilities == nil:
		e.printf("    capabilities: %s\n", describeCapabilities(dc.NewCapabilities))
	case dc.NewCapabilities != nil && (len(dc.GainedCapabilities) > 0 || len(dc.LostCapabilities) > 0):
		e.printf("    capabilities: %s → %s\n", capList(dc.OldCapabilities.Capabilities), describeCapabilities(dc.NewCapabilities))
	}
}

// describeCapabilities lists capabilities with their sources.
func describeCapabilities(t *ToolCapabilities) string {
	parts := make([]string, len(t.Capabilities))
	for i, c := range t.Capabilities {
		parts[i] = fmt.Sprintf("%s (%s)", c, sourceList(t.Sources[c]))
	}
	return strings.Join(parts, ", ")
}

// WriteDiffJSON writes the diff as JSON (docs/JSON.md, docs/DRIFT.md) with
// the verdict under f, reportVersion 1.
func WriteDiffJSON(w io.Writer, d *DiffResult, f DiffFailOn) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		ReportVersion int `json:"reportVersion"`
		*DiffResult
		Changed bool       `json:"changed"`
		FailOn  DiffFailOn `json:"failOn"`
		Failed  bool       `json:"failed"`
	}{1, d, d.Changed(), f, d.Failed(f)})
}

// WriteCapabilities writes the capabilities of every tool of a lock, with
// their sources, delete and exec marked "!": what an approver should read.
func WriteCapabilities(w io.Writer, l *Lock) error {
	e := &errWriter{w: w}
	caps := l.ToolCapabilities()
	for _, d := range l.Definitions {
		t, ok := caps[d.Key]
		if d.Kind != digest.KindTool || !ok {
			continue
		}
		mark := " "
		for _, c := range t.Capabilities {
			if c.Dangerous() {
				mark = "!"
			}
		}
		e.printf("  %s %-24s %s\n", mark, textsafe.Escape(d.Key), describeCapabilities(t))
	}
	return e.err
}

// countText is digest.CountText of a report's counts (by list member).
func countText(counts map[string]int) string {
	return digest.CountText(func(k digest.Kind) int { return counts[k.ListMember()] })
}

// plural returns "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// otherServer is the first line of a report whose lock was approved for a
// server of another name: a lock passed for the wrong server is the likelier
// mistake, and its findings are read in that light. "" when the names agree.
func otherServer(r *Report) string {
	if r.Approval == nil || r.Locked.Name == r.Observed.Name {
		return ""
	}
	return fmt.Sprintf("NOTE: this lock is for server %s, but the server calls itself %s",
		textsafe.Quote(r.Locked.Name), textsafe.Quote(r.Observed.Name))
}
