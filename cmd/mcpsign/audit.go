package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
)

func newAuditCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and read a hash-chained audit log",
		Long: `The audit log (docs/AUDIT.md) is a JSON Lines file that 'mcpsign pin',
'verify --write-lock', 'approve' and 'proxy' append to with --audit-log FILE:
every approval, roll-forward, block and refused lock, each line holding the
SHA-256 of the line before it, so that a removed, edited or reordered line
breaks the chain.`,
	}
	cmd.AddCommand(newAuditVerifyCmd(a), newAuditShowCmd(a), newAuditRepairCmd(a))
	return cmd
}

func newAuditVerifyCmd(a *app) *cobra.Command {
	var o options.AuditVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify FILE [--lock LOCK]... [--expect-head sha256:HEX]...",
		Short: "Check an audit log's hash chain, order and anchors; name the first broken line",
		Long: `Read every line of the audit log strictly and check its chain (the first
line's prev is null, every other's is the SHA-256 of the line before) and its
order (time never goes backwards; each event's lockBefore is the lockAfter of
the event before it about the same server). It prints the number of events and
the log's head, the digest of its last line: keep it elsewhere and check it
later with --expect-head.

The chain alone cannot show that events were cut from the end. Anchors can:
--lock LOCK checks that the log reaches the head the lock recorded when it was
written (its auditHead), that the next line is the approval of that very lock,
and that no later approval replaced it; --expect-head checks that a head kept
elsewhere is a line of the log. Lines after an anchor are allowed: the log
grows (docs/AUDIT.md "Anchors").

Exit codes: 0 the log verifies and reaches every anchor; 1 a line is malformed,
breaks the chain, is out of order or is not whole (named with its number and
byte offset), or an anchor is not reached; 2 a file cannot be read.`,
		Example: `  mcpsign audit verify audit.jsonl
  mcpsign audit verify audit.jsonl --lock notes.mcpsign.lock
  mcpsign audit verify audit.jsonl --expect-head sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditVerify(cmd, a, args, &o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runAuditVerify checks an audit log and its anchors.
func runAuditVerify(cmd *cobra.Command, a *app, args []string, o *options.AuditVerifyOptions) error {
	anchors, err := auditevent.Anchors(o.Locks, o.ExpectHeads)
	switch {
	case errors.As(err, new(*auditevent.NoHeadError)):
		return failed(err)
	case errors.As(err, new(*auditevent.HeadError)):
		return fmt.Errorf("--expect-head %w", err)
	case err != nil:
		return err
	}
	sum, err := audit.Check(args[0], audit.CheckOptions{Anchors: anchors})
	if err != nil {
		return auditBroken(err, "audit log "+args[0])
	}
	return sum.WriteText(a.stdout, args[0], len(anchors))
}

func newAuditRepairCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "repair FILE",
		Short: "Mend the last line a killed writer left, so that writers can go on",
		Long: `A writer killed mid-write leaves a last line without its newline, and
writers refuse to append after it. repair checks the whole chain and, when the
only fault is that last line, mends it (under the writers' file lock): a last
line that is a whole event continuing the chain gets its newline back; any
other (a partial line) is cut at the end of the last whole line. Any other
break (a line removed, edited or reordered) is refused: it is evidence, and
repair never rewrites it.

Exit codes: 0 repaired or already whole; 1 the chain is broken elsewhere; 2 the
file cannot be read or written.`,
		Example: `  # A proxy was killed while it wrote: writers refuse to append until the
  # last line is mended; then check the whole chain again
  mcpsign audit repair audit.jsonl
  mcpsign audit verify audit.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditRepair(cmd, a, args)
		},
	}
}

// runAuditRepair mends the last line of an audit log.
func runAuditRepair(cmd *cobra.Command, a *app, args []string) error {
	done, err := audit.Repair(cmd.Context(), args[0])
	if err != nil {
		return auditBroken(err, "audit log "+args[0]+": not repaired")
	}
	return done.WriteText(a.stdout, args[0])
}

func newAuditShowCmd(a *app) *cobra.Command {
	var o options.AuditShowOptions
	cmd := &cobra.Command{
		Use:   "show FILE [--server NAME] [--since TIME] [--format json]",
		Short: "Show the events of an audit log",
		Long: `Print the events of the audit log, oldest first, server text escaped; with
--format json, the lines themselves as written. The chain is checked while
reading: at the first broken line the events before it have been shown, the
break is reported, and the command exits 1.`,
		Example: `  # What happened in the last day
  mcpsign audit show audit.jsonl --since 24h

  # One server's events, as the lines were written (JSON Lines, docs/AUDIT.md)
  mcpsign audit show audit.jsonl --server notes --format json

  # Everything since a point in time
  mcpsign audit show audit.jsonl --since 2026-11-30T00:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditShow(cmd, a, args, &o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runAuditShow prints the events of an audit log that the flags select.
func runAuditShow(cmd *cobra.Command, a *app, args []string, o *options.AuditShowOptions) error {
	asJSON, err := o.Out.JSON()
	if err != nil {
		return err
	}
	filter := audit.Filter{Server: o.Server}
	if o.Since != "" {
		if filter.Since, err = audit.ParseSince(o.Since, time.Now()); err != nil {
			return fmt.Errorf("--since %w", err)
		}
	}
	err = audit.Show(args[0], a.stdout, audit.ShowOptions{Filter: filter, JSON: asJSON})
	return auditBroken(err, "audit log "+args[0])
}

// auditBroken is exit 1, said after what, for a log that breaks a reading
// rule or reaches no anchor (docs/AUDIT.md); other errors are 2.
func auditBroken(err error, what string) error {
	if audit.Broken(err) {
		return failed(fmt.Errorf("%s: %w", what, err))
	}
	return err
}
