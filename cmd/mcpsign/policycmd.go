package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
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
			err := policy.Check(args[0], a.stdout)
			if errors.As(err, new(*policy.BlockedError)) {
				return failed(err)
			}
			return err
		},
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
			if err := policy.WriteInit(args[0], force); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "mcpsign: wrote %s; add identities, then 'mcpsign policy check %s'\n", textsafe.Escape(args[0]), textsafe.Escape(args[0]))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}
