package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/pin/diff"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/source"
)

func newDiffCmd(a *app) *cobra.Command {
	var (
		src options.SourceOptions
		out options.OutputOptions
		do  options.DiffOptions
	)
	cmd := &cobra.Command{
		Use:   "diff A B [--fail-on drift|breaking|capability|never] [flags]",
		Short: "Show what changed between two states of a server's definitions",
		Long: `Show what changed from A to B, where each side is a live server, a snapshot, a
lock or a Sigstore bundle whose statement embeds the definitions.

A side that is a file is read by its content: a lock (checked completely: a
modified lock is refused), a bundle (its statement is read WITHOUT verifying
the signature: the side is marked UNVERIFIED, and shows only what the file
claims; use 'mcpsign verify' to trust it), or a snapshot. Anything else is a
source: a command line that starts a stdio server (quote it as one argument)
or a Streamable HTTP URL.

Shown: tools, prompts and resource templates added and removed; for each
changed definition the members that changed, descriptions as unified text
diffs and schemas and annotations as indented-JSON diffs; capability changes
of tools; server, protocol version and instruction changes. Control,
bidirectional and invisible characters are escaped.

Breaking changes are flagged: a removed definition, a removed parameter
(inputSchema properties, prompt arguments), a newly required parameter, a
parameter whose type changed, a tool that newly can delete or execute, and
text that gained hidden (invisible, bidirectional-control or tag) characters.
--fail-on takes verify-pin's words: drift exits 1 on any difference, breaking
on a breaking change, capability on a new delete or exec or hidden characters;
never (the default) only reports (any and none are aliases of drift and
never). The rules are in docs/DRIFT.md; --format json prints the report of
docs/JSON.md.

Exit codes: 0 no failing difference; 1 a difference under --fail-on; 2 bad
usage, an unreadable side, or a server that could not be read.`,
		Example: `  # What changed since the lock was approved?
  mcpsign diff notes.mcpsign.lock 'npx -y @acme/notes-mcp@1.3.0'

  # Review a release: the signed bundle of the last one against the new snapshot
  mcpsign diff v1.2.0.sigstore.json v1.3.0.snapshot.json --fail-on breaking

  # Two snapshots, as JSON
  mcpsign diff before.snapshot.json after.snapshot.json --format json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, a, args, &src, &out, &do)
		},
	}
	fs := cmd.Flags()
	src.AddFlags(fs)
	out.AddFlags(fs)
	do.AddFlags(fs)
	return cmd
}

// runDiff compares the two sides of the arguments and reports the differences.
func runDiff(cmd *cobra.Command, a *app, args []string, src *options.SourceOptions, out *options.OutputOptions, do *options.DiffOptions) error {
	asJSON, err := out.JSON()
	if err != nil {
		return err
	}
	failOn, err := diff.ParseFailOn(do.FailOn)
	if err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	if cmd.ArgsLenAtDash() >= 0 {
		return errors.New("diff takes two sides and no --: quote a server command line as one argument")
	}
	overrides, err := options.ReadOverrides(do.Capabilities)
	if err != nil {
		return err
	}
	var sides [2]*diff.Side
	for i, arg := range args {
		if sides[i], err = diffSide(cmd, a, src, arg); err != nil {
			return fmt.Errorf("side %c: %w", 'A'+i, err)
		}
		if overrides != nil {
			sides[i].Capabilities = overrides
		}
	}
	d := diff.Compare(sides[0], sides[1], diff.Options{})
	if asJSON {
		err = diff.WriteJSON(a.stdout, d, failOn)
	} else {
		err = diff.WriteText(a.stdout, d)
	}
	if err != nil {
		return err
	}
	if d.Failed(failOn) {
		return silentExit(exitFailed)
	}
	return nil
}

// diffSide reads one side: a lock, bundle or snapshot file by content, or
// else a source, listed live.
func diffSide(cmd *cobra.Command, a *app, src *options.SourceOptions, arg string) (*diff.Side, error) {
	side, ok, err := pinbundle.ReadSideFile(arg)
	if ok || err != nil {
		return side, err
	}
	spec, err := source.ParseSpec(arg, nil)
	if err != nil {
		return nil, err
	}
	snap, err := loadSpec(cmd, a, src, spec, spec.URL != "") // --oauth signs in to a live URL side only
	if err != nil {
		return nil, err
	}
	return pinbundle.SourceSide(arg, spec, snap), nil
}
