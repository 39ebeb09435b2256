package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

func newPolicyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy check|init",
		Short: "Check or start a policy file: whom to trust for which server (docs/POLICY.md)",
		Long: `A policy file says, for each MCP server, whom to trust, what a bundle must
carry, where its lock lives and how the proxy enforces it, and what is revoked
(docs/POLICY.md). verify, pin, verify-pin and proxy read it with
--policy FILE --name NAME instead of the trust and identity flags.`,
		Example: `  # Start one, edit it, check it, then enforce it for the server "notes"
  mcpsign policy init policy.json
  mcpsign policy check policy.json
  mcpsign proxy --policy policy.json --name notes -- npx -y @acme/notes-mcp@1.2.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPolicyCheckCmd(a), newPolicyInitCmd(a))
	return cmd
}

func newPolicyCheckCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy file and print what each server would require",
		Long: `Validate a policy file and print, for each server, what it would require:
identities and threshold, log and timestamp, bundle source, package, lock,
mode, unsigned and roll-forward rules.

The files the policy names are read as verification reads them: every key
file, the trusted root and the CA certificates (a missing file, or one that
is not what its member says, is refused with its JSON Pointer and path).
Key IDs, digests, identities and server names must be written in their one
canonical form, and no entry may repeat another (docs/POLICY.md "Canonical
forms").

Exit codes: 0 every server resolves; 1 a server is blocked (it names no
identity and refuses unsigned servers: the message says what to add); 2 the
file cannot be read or is refused (the member and the reason named).`,
		Example: `  mcpsign policy check /etc/mcpsign/policy.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := policy.Read(args[0])
			if err != nil {
				return err
			}
			if err := f.CheckFiles(); err != nil {
				return err
			}
			blocked := 0
			w := a.stdout
			fmt.Fprintf(w, "policy %s: %d server(s)\n", textsafe.Escape(f.Path), len(f.Names))
			printTrust(w, f.Trust)
			for _, n := range f.Names {
				r, err := f.Resolve(n, policy.ResolveOptions{})
				if err != nil {
					blocked++
					fmt.Fprintf(w, "\nserver %s: BLOCKED: %s\n", textsafe.Escape(n), textsafe.Escape(err.Error()))
					continue
				}
				printResolved(w, r)
			}
			if len(f.Revoked.Bundles)+len(f.Revoked.Definitions)+len(f.Revoked.Identities) > 0 {
				fmt.Fprintf(w, "\nrevoked: %d bundle(s), %d definition(s), %d identities\n",
					len(f.Revoked.Bundles), len(f.Revoked.Definitions), len(f.Revoked.Identities))
				for _, s := range f.Revoked.Identities {
					fmt.Fprintf(w, "  identity %s\n", textsafe.Quote(s))
				}
			}
			if blocked > 0 {
				return failed(fmt.Errorf("%d server(s) blocked by the policy", blocked))
			}
			return nil
		},
	}
}

func printTrust(w io.Writer, t policy.Trust) {
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

func printResolved(w io.Writer, r *policy.Resolved) {
	fmt.Fprintf(w, "\nserver %s:\n", textsafe.Escape(r.Name))
	if len(r.Identities) == 0 {
		fmt.Fprintln(w, "  identities: none (unsigned: tofu: pinned on first use, no signature vouches for it)")
	} else {
		fmt.Fprintf(w, "  signed by %d of %d distinct identities:\n", r.Threshold, len(r.Identities))
		for _, id := range r.Identities {
			fmt.Fprintf(w, "    %s\n", textsafe.Escape(id.String()))
		}
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
		if slices.ContainsFunc(r.Identities, func(id policy.Identity) bool { return id.Method == verify.MethodSigstore }) {
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
	fmt.Fprintf(w, "  lock: %s\n", textsafe.Escape(r.Lock))
	fmt.Fprintf(w, "  mode: %s, unsigned: %s, roll-forward: %s\n", r.Mode, r.Unsigned, r.RollForward)
	if r.Resources != "" {
		fmt.Fprintf(w, "  resources: %s\n", r.Resources)
	} else {
		fmt.Fprintf(w, "  resources: the lock's (pin when it records resources, else pass)\n")
	}
	if r.Audit != "" {
		fmt.Fprintf(w, "  audit log: %s\n", textsafe.Escape(r.Audit))
	}
}

func newPolicyInitCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init FILE",
		Short: "Write a starting-point policy file",
		Long: `Write a starting-point policy file: valid JSON whose guidance is in "$comment"
members (JSON has no comments; the reader ignores "$comment"). Its one server,
"example", is blocked until an identity is added: a starting point trusts
nothing. An existing file is kept unless --force; the file is written
atomically.`,
		Example: `  mcpsign policy init /etc/mcpsign/policy.json && $EDITOR /etc/mcpsign/policy.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := atomicfile.Write(args[0], policy.InitTemplate(), atomicfile.Options{Perm: 0o644, Overwrite: force})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "mcpsign: wrote %s; add identities, then 'mcpsign policy check %s'\n", textsafe.Escape(args[0]), textsafe.Escape(args[0]))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}
