package sign

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/dn"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Report is the stable JSON form of a signature made (docs/SIGNING.md,
// "Output"; docs/JSON.md): what 'mcpsign sign --format json' prints.
type Report struct {
	ReportVersion int             `json:"reportVersion"`
	Bundle        string          `json:"bundle"`
	Method        evidence.Method `json:"method"`
	Server        json.RawMessage `json:"server"`
	Subjects      int             `json:"subjects"`
	Identity      ReportIdentity  `json:"identity"`
	Tlog          []ReportTlog    `json:"tlog"`
	Timestamps    []Timestamp     `json:"timestamps"`
}

// ReportIdentity is the signer of a Report: the members of its method.
type ReportIdentity struct {
	SAN     string   `json:"san,omitempty"`
	Issuer  string   `json:"issuer,omitempty"`
	SANs    []string `json:"sans,omitempty"`
	Subject string   `json:"subject,omitempty"`
	KeyID   string   `json:"keyId,omitempty"`
	KeyHint string   `json:"keyHint,omitempty"`
	// Source is what the Fulcio certificate's source extensions vouch for.
	Source *attest.Source `json:"source,omitempty"`
}

// ReportTlog is a log entry of a Report.
type ReportTlog struct {
	LogIndex       int64      `json:"logIndex"`
	LogID          string     `json:"logId"`
	Kind           string     `json:"kind"`
	InclusionProof bool       `json:"inclusionProof"`
	IntegratedTime *time.Time `json:"integratedTime,omitempty"`
}

// Report returns the report of r, the signature of st written to bundle.
func (r *Result) Report(bundle string, st *attest.Statement) *Report {
	server, _ := json.Marshal(st.Predicate.Server)
	out := &Report{
		ReportVersion: 1,
		Bundle:        bundle, Method: r.Method, Server: server, Subjects: len(st.Subject),
		Identity: ReportIdentity{SAN: r.Identity.SAN, Issuer: r.Identity.Issuer, Source: r.Identity.Source},
		Tlog:     []ReportTlog{}, Timestamps: []Timestamp{},
	}
	switch r.Method {
	case evidence.MethodKey:
		out.Identity = ReportIdentity{KeyID: r.Identity.KeyID, KeyHint: r.Identity.KeyHint}
	case evidence.MethodCertificate:
		out.Identity = ReportIdentity{SAN: r.Identity.SAN, SANs: r.Identity.SANs, Subject: r.Identity.Subject}
	}
	for _, e := range r.TlogEntries {
		t := ReportTlog{LogIndex: e.LogIndex, LogID: e.LogID, Kind: e.Kind, InclusionProof: e.InclusionProof}
		if e.IntegratedTime != nil {
			t.IntegratedTime = new(e.IntegratedTime.UTC())
		}
		out.Tlog = append(out.Tlog, t)
	}
	for _, t := range r.Timestamps {
		out.Timestamps = append(out.Timestamps, Timestamp{Kind: t.Kind, URI: t.URI, Time: t.Time.UTC()})
	}
	return out
}

// WriteText writes what r proves of st, written to bundle, as 'mcpsign
// sign' prints it: the signer, the log entries and the timestamps, every
// string from a certificate or a service escaped.
func (r *Result) WriteText(w io.Writer, bundle string, st *attest.Statement) error {
	fmt.Fprintf(w, "Signed %s\n", st.Summary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  method\t%s\n", r.Method)
	id := r.Identity
	switch r.Method {
	case evidence.MethodSigstore:
		fmt.Fprintf(tw, "  signer\t%s\n", textsafe.Quote(id.SAN))
		fmt.Fprintf(tw, "  issuer\t%s\n", textsafe.Quote(id.Issuer))
		WriteSourceText(tw, st.Predicate.Source, id.Source)
	case evidence.MethodCertificate:
		// DNs in quotes but not re-escaped: the text between the quotes is
		// what a DN matcher takes (docs/VERIFY.md).
		fmt.Fprintf(tw, "  subject\t\"%s\"\n", dn.Text(id.Subject))
		for _, san := range id.SANs {
			fmt.Fprintf(tw, "  SAN\t%s\n", textsafe.Quote(san))
		}
		if c := id.Certificate; c != nil {
			fmt.Fprintf(tw, "  issued by\t\"%s\"\n", dn.Text(dn.String(c.RawIssuer)))
			fmt.Fprintf(tw, "  valid until\t%s\n", c.NotAfter.UTC().Format(time.RFC3339))
		}
	case evidence.MethodKey:
		fmt.Fprintf(tw, "  key\t%s\n", textsafe.Escape(id.KeyID))
	}
	if len(r.TlogEntries) == 0 {
		fmt.Fprintf(tw, "  tlog\tnone\n")
	}
	for _, e := range r.TlogEntries {
		proof := "inclusion proof"
		if !e.InclusionProof {
			proof = "inclusion promise only"
		}
		fmt.Fprintf(tw, "  tlog\tindex %d, log %s (%s, %s)\n", e.LogIndex, shortID(e.LogID), textsafe.Escape(e.Kind), proof)
	}
	tsa := 0
	for _, t := range r.Timestamps {
		if t.Kind == "tsa" {
			tsa++
			fmt.Fprintf(tw, "  timestamp\t%s from %s\n", t.Time.UTC().Format(time.RFC3339), textsafe.Quote(t.URI))
		} else {
			fmt.Fprintf(tw, "  log time\t%s\n", t.Time.UTC().Format(time.RFC3339))
		}
	}
	if tsa == 0 {
		fmt.Fprintf(tw, "  timestamp\tnone\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Wrote %s (verified before writing)\n", bundle)
	return err
}

func shortID(id string) string {
	if len(id) > 16 {
		return id[:16] + "…"
	}
	return id
}

// WriteSourceText writes the source a Fulcio certificate vouches for, one
// tab-separated line a field, each with whether the statement claims it
// (a contradiction never gets here: Sign refuses it).
func WriteSourceText(w io.Writer, claimed, vouched *attest.Source) {
	if vouched == nil {
		return
	}
	for _, f := range attest.SourceFields() {
		v := f.Get(vouched)
		if v == "" {
			continue
		}
		note := "the statement does not claim it"
		if claimed != nil && f.Get(claimed) == v {
			note = "the statement's claim agrees"
		}
		fmt.Fprintf(w, "  certificate %s\t%s (%s)\n", f.Claim, textsafe.Quote(v), note)
	}
}
