package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textout"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// The writers below turn reports into text for people, Markdown for a CI
// job summary, or JSON for machines (docs/DRIFT.md, docs/JSON.md).
// Every server-provided string is escaped for text and Markdown (control,
// bidirectional and invisible characters); JSON keeps it raw, as JSON
// escaping is unambiguous.

// describeApproval says how a lock was approved, for people, raw: the
// writer escapes it where it prints it.
func describeApproval(a *Approval) string {
	at := a.ApprovedAt.UTC().Format(time.RFC3339)
	switch a.Method {
	case MethodTOFU:
		return "trusted on first use (tofu, no signature) at " + at
	case MethodManual:
		return manualText(a) + ", at " + at
	case evidence.MethodKey:
		return fmt.Sprintf("signed with key %s, approved at %s", a.Identity, at)
	default:
		s := fmt.Sprintf("signed by %s", textsafe.RawQuote(a.Identity))
		if a.Issuer != "" {
			s += " (issuer " + textsafe.RawQuote(a.Issuer) + ")"
		}
		s += fmt.Sprintf(" via %s, approved at %s", a.Method, at)
		if a.Tlog != nil {
			s += fmt.Sprintf(", log index %d", a.Tlog.LogIndex)
		}
		return s
	}
}

// ManualText describes a manual approval for people: who approved it and
// why, and the source revision reviewed, if any; escaped, to be printed as
// it is.
func ManualText(a *Approval) string { return textsafe.Escape(manualText(a)) }

// manualText is ManualText raw.
func manualText(a *Approval) string {
	s := fmt.Sprintf("approved manually by %s (no signature): %s", textsafe.RawQuote(a.Approver), textsafe.RawQuote(a.Reason))
	if a.SourceRevision != "" {
		s += ", source revision " + textsafe.RawQuote(a.SourceRevision)
	}
	return s
}

// WriteReportText writes a drift report for people: the lock and its
// approval, then every finding with its field diffs, server text escaped.
func WriteReportText(w io.Writer, r *Report) error {
	e := textout.NewWriter(w)
	if n := otherServer(r); n != "" {
		e.Printf("%s\n", textsafe.Escape(n))
	}
	if r.Lock != "" {
		e.Printf("lock:   %s\n", textsafe.Escape(r.Lock))
	}
	if r.Approval != nil {
		e.Printf("pinned: %s, %s\n", textout.ServerName(r.Locked.Name, r.Locked.Version), textsafe.Escape(describeApproval(r.Approval)))
		e.Printf("server: %s · %s\n", textout.ServerName(r.Observed.Name, r.Observed.Version), countText(r.Counts))
	}
	errs := r.Errors()
	if errs == 0 {
		e.Printf("\nOK: the server matches the lock")
		if n := len(r.Findings); n > 0 {
			e.Printf(" (%d %s)", n, SeverityInfo) // counted by the label its rows carry
		}
		e.Printf("\n")
	} else {
		e.Printf("\nDRIFT: %s, %d %s\n", textout.Plural(errs, string(SeverityError)), len(r.Findings)-errs, SeverityInfo)
	}
	for _, f := range r.Findings {
		e.Printf("\n%-5s  %s  %s\n", f.Severity, f.Rule, textsafe.Escape(f.Message))
		for _, c := range f.Changes {
			_ = c.WriteText(e, "    ")
		}
		if f.Diff != "" {
			e.Printf("    instructions:\n")
			textout.DiffLines(e, f.Diff, "      ")
		}
	}
	return e.Err()
}

// WriteReportMarkdown writes a drift report as GitHub-flavored Markdown (for
// $GITHUB_STEP_SUMMARY): a verdict, a table of findings, and the diffs in
// fenced blocks. Server text is escaped for the terminal and for Markdown.
func WriteReportMarkdown(w io.Writer, r *Report, f FailOn) error {
	e := textout.NewWriter(w)
	verdict := "✅ no drift"
	if r.Approval == nil {
		verdict = "❌ the lock was refused"
	} else if n := r.Errors(); n > 0 {
		verdict = "❌ drift: " + textout.Plural(n, "error")
		if !r.Failed(f) {
			verdict += fmt.Sprintf(" (not failing: the threshold is %s)", f)
		}
	}
	e.Printf("### mcpsign verify-pin: %s\n\n", verdict)
	if n := otherServer(r); n != "" {
		e.Printf("**%s**\n\n", mdText(n))
	}
	if r.Lock != "" {
		e.Printf("- Lock: %s\n", mdText(r.Lock))
	}
	if r.Approval != nil {
		e.Printf("- Pinned: %s, %s\n", mdText(textout.ServerNameRaw(r.Locked.Name, r.Locked.Version)), mdText(describeApproval(r.Approval)))
		e.Printf("- Server: %s · %s\n", mdText(textout.ServerNameRaw(r.Observed.Name, r.Observed.Version)), countText(r.Counts))
	}
	if len(r.Findings) == 0 {
		return e.Err()
	}
	e.Printf("\n| Severity | Rule | Message |\n|---|---|---|\n")
	for _, fd := range r.Findings {
		e.Printf("| %s | `%s` | %s |\n", fd.Severity, fd.Rule, mdCell(fd.Message))
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
		e.Printf("\n<details><summary>%s</summary>\n\n%sdiff\n%s%s\n\n</details>\n",
			mdCell(fd.Rule+": "+string(fd.Kind)+" "+textsafe.RawQuote(fd.Key)), fence, b.String(), fence)
	}
	return e.Err()
}

// mdText escapes text for Markdown prose: control and invisible
// characters (textsafe), HTML, and the characters that start Markdown
// syntax, in one pass.
func mdText(s string) string {
	return mdEscaper.Get().Replace(textsafe.Escape(s))
}

var mdEscaper = lazy.New(newMDEscaper)

func newMDEscaper() *strings.Replacer {
	return strings.NewReplacer(
		"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "`", "&#96;", "@", "&#64;",
		`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "|", `\|`, "#", `\#`, "~", `\~`,
	)
}

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

// countText is digest.CountText of a report's counts (by list member).
func countText(counts map[string]int) string {
	return digest.CountText(func(k digest.Kind) int { return counts[k.ListMember()] })
}

// otherServer is the first line of a report whose lock was approved for a
// server of another name: a lock passed for the wrong server is the likelier
// mistake, and its findings are read in that light; raw (the writer
// escapes it). "" when the names agree.
func otherServer(r *Report) string {
	if r.Approval == nil || r.Locked.Name == r.Observed.Name {
		return ""
	}
	return fmt.Sprintf("NOTE: this lock is for server %s, but the server calls itself %s",
		textsafe.RawQuote(r.Locked.Name), textsafe.RawQuote(r.Observed.Name))
}
