package verify

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// shortDigest shortens "sha256:<64 hex>" for the table; "-" for none.
func shortDigest(d string) string {
	if d == "" {
		return "-"
	}
	if strings.HasPrefix(d, digest.Prefix) && len(d) > len(digest.Prefix)+12 {
		return d[:len(digest.Prefix)+12] + "…"
	}
	return d
}

// TextOptions tune WriteResultText. The zero value is ready to use.
type TextOptions struct {
	// BundleHint, when not empty, follows a failure at StepBundle on a
	// line of its own, in parentheses: the caller's advice on passing a
	// readable bundle (this package names no command-line flags).
	BundleHint string
}

// WriteResultText writes the text report of a verification for people
// (docs/VERIFY.md): one verdict line (VERIFIED, or FAILED with the step of
// verr), the evidence, the claims and the certificate's source, then the
// per-definition table and the diffs of changed definitions. res may be
// nil (nothing was verified: the verdict line only); verr is the error the
// verification returned, nil when it passed. Every string from the bundle, the certificate or
// the server is escaped with internal/textsafe.
func WriteResultText(w io.Writer, res *Result, verr error, opts TextOptions) error {
	esc := textsafe.Escape
	switch {
	case verr == nil && res != nil && res.Statement != nil:
		fmt.Fprintf(w, "VERIFIED %s %s: %s match the signed statement\n",
			esc(res.Server.Name), esc(res.Server.Version), verifiedSummary(res))
	case verr == nil:
		fmt.Fprintln(w, "VERIFIED Sigstore bundle")
	default:
		step, ok := FailedStep(verr)
		if ok {
			var se *StepError
			shown := textsafe.ShowError(verr)
			if errors.As(verr, &se) {
				shown = textsafe.ShowError(se.Err)
			}
			fmt.Fprintf(w, "FAILED at step %s: %s\n", step, shown)
			if step == StepBundle && opts.BundleHint != "" {
				fmt.Fprintf(w, "(%s)\n", opts.BundleHint)
			}
		} else {
			fmt.Fprintf(w, "FAILED: %s\n", textsafe.ShowError(verr))
		}
	}
	if res == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	line("method", string(res.Method))
	line("identity", esc(res.Identity))
	line("issuer", esc(res.Issuer))
	line("subject", dn.Text(res.Subject))
	if t := res.Tlog; t != nil {
		s := fmt.Sprintf("index %d in log %s", t.LogIndex, t.LogID)
		if t.IntegratedTime != nil {
			s += ", integrated " + t.IntegratedTime.UTC().Format(time.RFC3339)
		}
		line("log entry", s)
	}
	if !res.SigningTime.IsZero() {
		line("signed at", res.SigningTime.UTC().Format(time.RFC3339)+" ("+timeSource(res.TimeSource)+")")
	}
	line("bundle", res.BundleDigest)
	if res.Statement != nil && res.Observed != nil && (res.Observed.Name != res.Server.Name || res.Observed.Version != res.Server.Version) {
		line("note", fmt.Sprintf("signed for server %s %s, the server now calls itself %s %s",
			textsafe.Quote(res.Server.Name), textsafe.Quote(res.Server.Version), textsafe.Quote(res.Observed.Name), textsafe.Quote(res.Observed.Version)))
	}
	for _, c := range res.Claims {
		line("claim", fmt.Sprintf("%s %s: %s (%s)", c.Name, textsafe.Quote(c.Value), c.Status, textsafe.Escape(c.Evidence)))
	}
	writeCertificateSource(line, res)
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Definitions == nil && res.Instructions == nil {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tKIND\tKEY\tSIGNED\tSERVED")
	for _, r := range res.Definitions {
		key := esc(r.Key)
		if r.Key == "" {
			key = fmt.Sprintf("(#%d)", r.Index)
		}
		served := shortDigest(r.Observed)
		if r.Status == StatusInvalid {
			served = "invalid: " + esc(r.Reason)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Status, r.Kind, key, shortDigest(r.Signed), served)
	}
	if ins := res.Instructions; ins != nil {
		fmt.Fprintf(tw, "%s\tinstructions\t\t%s\t%s\n", ins.Status, shortDigest(ins.Signed), shortDigest(ins.Observed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range res.Definitions {
		if r.Diff != "" {
			fmt.Fprintf(w, "\n%s %s changed:\n%s", r.Kind, textsafe.Quote(r.Key), r.Diff)
		}
	}
	return nil
}

// writeCertificateSource writes the source repository, commit and ref the
// certificate's Fulcio extensions vouch for, each with whether the
// predicate claims the same (a contradiction failed the statement step).
func writeCertificateSource(line func(k, v string), res *Result) {
	cs := res.CertificateSource
	if cs == nil {
		return
	}
	var claimed *attest.Source
	if res.Statement != nil {
		claimed = res.Statement.Predicate.Source
	}
	for _, f := range attest.SourceFields() {
		v := f.Get(cs)
		if v == "" {
			continue
		}
		agree := "the predicate does not claim it"
		switch {
		case claimed != nil && f.Get(claimed) == v:
			agree = "the predicate's claim agrees"
		case claimed != nil && f.Get(claimed) != "":
			agree = "the predicate claims " + textsafe.Quote(f.Get(claimed))
		case res.Statement == nil:
			agree = "the statement was not read"
		}
		line("certificate "+f.Claim, textsafe.Quote(v)+" ("+agree+")")
	}
}

func timeSource(s string) string {
	switch s {
	case "Tlog":
		return "transparency log"
	case "TimestampAuthority":
		return "timestamp authority"
	case "CurrentTime":
		return "current time: no verified signing time"
	}
	return s
}

func verifiedSummary(res *Result) string {
	n := map[digest.Kind]int{}
	for _, r := range res.Definitions {
		n[r.Kind]++
	}
	s := digest.CountText(func(k digest.Kind) int { return n[k] })
	if res.Instructions != nil {
		s += " and the instructions"
	}
	return s
}
