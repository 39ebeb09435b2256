package policy

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// WriteCheckText writes, for people, what each server of f would require
// (identities and threshold, log and timestamp, bundle, package, lock,
// mode, unsigned and roll-forward rules, resources, audit log), the
// trusted material and what is revoked, every path and server string
// escaped; it returns how many servers are blocked (Resolve fails: the
// line says why).
func (f *File) WriteCheckText(w io.Writer) (blocked int) {
	fmt.Fprintf(w, "policy %s: %d server(s)\n", textsafe.Escape(f.Path), len(f.Names))
	writeTrustText(w, f.Trust)
	for _, n := range f.Names {
		r, err := f.resolveAny(n, ResolveOptions{})
		if err != nil {
			blocked++
			fmt.Fprintf(w, "\nserver %s: BLOCKED: %s\n", textsafe.Escape(n), textsafe.ShowError(err))
			continue
		}
		r.writeText(w)
	}
	if len(f.Revoked.Bundles)+len(f.Revoked.Definitions)+len(f.Revoked.Identities) > 0 {
		fmt.Fprintf(w, "\nrevoked: %d bundle(s), %d definition(s), %d identities\n",
			len(f.Revoked.Bundles), len(f.Revoked.Definitions), len(f.Revoked.Identities))
		for _, s := range f.Revoked.Identities {
			fmt.Fprintf(w, "  identity %s\n", textsafe.Quote(s))
		}
	}
	return blocked
}

func writeTrustText(w io.Writer, t Trust) {
	switch {
	case t.TrustedRoot != "":
		fmt.Fprintf(w, "trust: trusted root %s\n", textsafe.Escape(t.TrustedRoot))
	case t.TUFMirror != "":
		fmt.Fprintf(w, "trust: TUF %s\n", textsafe.Escape(t.TUFMirror))
	default:
		fmt.Fprintln(w, "trust: the public-good root through TUF")
	}
	if t.CARoots != "" {
		fmt.Fprintf(w, "trust: CA roots %s\n", textsafe.Escape(t.CARoots))
	}
	if t.CAIntermediates != "" {
		fmt.Fprintf(w, "trust: CA intermediates %s\n", textsafe.Escape(t.CAIntermediates))
	}
}

func (r *Resolved) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nserver %s:\n", textsafe.Escape(r.Name))
	rs := r.RepositorySigner
	switch n := len(r.Identities) + rs.count(); {
	case n == 0:
		fmt.Fprintln(w, "  identities: none (unsigned: tofu: pinned on first use, no signature vouches for it)")
	default:
		fmt.Fprintf(w, "  signed by %d of %d distinct identities:\n", r.Threshold, n)
		for _, id := range r.Identities {
			fmt.Fprintf(w, "    %s\n", textsafe.Escape(id.String()))
		}
	}
	if rs != nil {
		owner := rs.Owner
		if owner == "" {
			owner = "the namespace's owner"
		}
		repos := "the one named as the entry"
		if rs.Repositories != nil {
			repos = strings.Join(rs.Repositories, ", ")
		}
		wf := "any workflow"
		if rs.Workflow != "" {
			wf = "workflow " + rs.Workflow
		}
		refs := rs.Refs
		if refs == nil {
			refs = DefaultRefs()
		}
		trig := "any trigger"
		if rs.Triggers != nil {
			trig = "triggers " + strings.Join(rs.Triggers, ", ")
		}
		fmt.Fprintf(w, "    the entry's repository: issuer %s, owner %s, repositories %s, %s, refs %s, %s\n",
			textsafe.Escape(rs.Issuer), textsafe.Escape(owner), textsafe.Escape(repos), textsafe.Escape(wf), textsafe.Escape(strings.Join(refs, ", ")), textsafe.Escape(trig))
	}
	var req []string
	if r.RequireTlog {
		req = append(req, "tlog")
	}
	if r.RequireTimestamp {
		req = append(req, "timestamp")
	}
	if len(req) == 0 {
		req = []string{"nothing more"}
		if slices.ContainsFunc(r.Identities, func(id Identity) bool { return id.Method == verify.MethodSigstore }) {
			req = []string{"nothing more (a sigstore identity always needs its log entry)"}
		}
	}
	fmt.Fprintf(w, "  require: %s\n", strings.Join(req, ", "))
	if r.MaxBundleAge > 0 {
		fmt.Fprintf(w, "  max bundle age: %s\n", r.MaxBundleAge)
	}
	fmt.Fprintf(w, "  bundle: %s\n", textsafe.Escape(r.Bundle.String()))
	if r.Package != "" {
		fmt.Fprintf(w, "  package: %s\n", textsafe.Escape(r.Package))
	}
	if r.Lock == "" {
		fmt.Fprintln(w, "  lock: none (it governs registry entries, which are verified, not run)")
	} else {
		fmt.Fprintf(w, "  lock: %s\n", textsafe.Escape(r.Lock))
	}
	fmt.Fprintf(w, "  mode: %s, unsigned: %s, roll-forward: %s\n", r.Mode, r.Unsigned, r.RollForward)
	if r.Resources != "" {
		fmt.Fprintf(w, "  resources: %s\n", r.Resources)
	} else {
		fmt.Fprintf(w, "  resources: the lock's (pin when it records resources, else pass)\n")
	}
	if r.Audit != "" {
		fmt.Fprintf(w, "  audit log: %s\n", textsafe.Escape(r.Audit))
	}
	if d := r.ServerRequests.Denied(); d != nil {
		fmt.Fprintf(w, "  server requests denied: %s (the others relayed)\n", strings.Join(d, ", "))
	} else {
		fmt.Fprintln(w, "  server requests: all relayed (sampling, elicitation, roots, logging)")
	}
}

// WriteText says, for people, which distinct signers met the entry's
// threshold, and the identities each satisfies.
func (d *Decision) WriteText(w io.Writer) {
	r := d.Policy
	fmt.Fprintf(w, "\npolicy %s: %d of %d distinct identities required, %d signed\n", textsafe.Escape(r.Name), r.Threshold, len(r.Identities), d.Matched)
	for _, s := range d.Signers {
		var ids []string
		for _, i := range s.Identities {
			ids = append(ids, fmt.Sprint(i))
		}
		fmt.Fprintf(w, "  signer %s %s (identities %s)\n", s.Result.Method, textsafe.Quote(s.Result.Identity), strings.Join(ids, ", "))
	}
}
