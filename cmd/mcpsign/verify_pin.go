package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

func newVerifyPinCmd(a *app) *cobra.Command {
	var (
		f  verifyFlags
		vp options.VerifyPinOptions
	)
	cmd := &cobra.Command{
		Use:   "verify-pin SOURCE --lock FILE [--fail-on drift|capability|never] [flags]",
		Short: "Check a server against its lock: any change to its definitions is drift",
		Long: `Check that a server still serves exactly what its lock approved: every tool,
prompt and resource template by kind, key and Definition Digest, and the
instructions. The lock is read and checked first (a modified or unreadable lock
is refused before the server is started).

Drift rules (docs/DRIFT.md):

  errors  pin-tool-added, pin-tool-removed, pin-tool-changed (and the same for
          prompt and resource-template), pin-capability-added (a tool has a
          new delete or exec), pin-hidden-characters (a text gained
          invisible, bidirectional-control or tag characters),
          pin-instructions-changed, pin-lock-modified
  infos   pin-server-changed, pin-protocol-changed

A changed definition is shown field by field: descriptions as text diffs,
schemas and annotations as indented-JSON diffs, with control, bidirectional
and invisible characters escaped (a hidden instruction shows as \u{200B}…).

--fail-on drift (the default) fails on any error; capability fails only when a
tool has a new delete or exec, or a text gained hidden characters; never only
reports (any and none, diff's words, are aliases of drift and never). Under GitHub Actions
($GITHUB_STEP_SUMMARY set) the report is also appended to the job summary as
Markdown. --format json prints the stable report of docs/DRIFT.md.

SOURCE is what 'mcpsign digest' accepts: a snapshot file, a command line that
starts a stdio server, a Streamable HTTP URL, or the words after --.

With --policy FILE --name NAME the lock is the policy's, and before the server
is read it must satisfy the policy (docs/POLICY.md "The lock in force"): it
rests on nothing revoked (policy-revoked), its method is one the policy allows
(policy-lock-method-refused: a tofu lock under "unsigned": "refuse"), and its
signer is listed (policy-lock-signer-unlisted). A signed lock is in force only
when its bundle proves it (a record is no proof: the server's user can write
the lock): --bundle (repeated for a threshold, the lock's own bundle first;
default the policy's bundle, or the one the server advertises) must verify the
lock's definitions under the policy and be the bundle the lock records; with no
bundle, or one that does not, it is refused (policy-lock-unproven). Each exits
1 whatever --fail-on says.

Exit codes: 0 no drift (or not failing under --fail-on); 1 drift under
--fail-on; 2 bad usage, a bad lock, or a server that could not be read.`,
		Example: `  # In CI: fail the job on any change to the pinned definitions
  mcpsign verify-pin --lock notes.mcpsign.lock -- npx -y @acme/notes-mcp@1.2.0

  # Tolerate wording changes, fail only when a tool can newly delete or execute
  mcpsign verify-pin https://mcp.example.com/mcp --lock remote.mcpsign.lock --fail-on capability

  # Machine-readable, never failing
  mcpsign verify-pin server.snapshot.json --lock notes.mcpsign.lock --fail-on never --format json

  # Under a policy: the lock must satisfy it (docs/POLICY.md "The lock in force");
  # a lock approved by a threshold of two is re-verified with its bundles
  mcpsign verify-pin --policy /etc/mcpsign/policy.json --name notes \
    --bundle notes.publisher.sigstore.json --bundle notes.security.sigstore.json -- npx -y @acme/notes-mcp@1.2.0`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerifyPin(cmd, a, &f, &vp, args)
		},
	}
	fs := cmd.Flags()
	f.src.AddFlags(fs)
	f.out.AddFlags(fs)
	vp.AddFlags(fs)
	f.pol.AddFlags(fs)
	// The bundles re-verify the lock's approval under --policy (with the
	// chain checked at the current time when they have no timestamp).
	options.StringArrayVar(fs, &f.vo.Bundles, "bundle", "with --policy: a bundle (file or https:// URL) that re-verifies a signed lock's approval (a threshold: repeat it, the lock's own bundle first); default the policy's bundle")
	fs.BoolVar(&f.vo.AllowCurrentTime, "allow-current-time", false, "with --policy: re-verifying a certificate lock's bundle that has no timestamp, check the chain at the current time")
	return cmd
}

// runVerifyPin checks the server against the lock, under f.pol when
// given: the lock must then stand under the policy (checkPinned).
func runVerifyPin(cmd *cobra.Command, a *app, f *verifyFlags, vp *options.VerifyPinOptions, args []string) error {
	f.serveFromArgs(cmd, args)
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	failOn, err := pin.ParseFailOn(vp.FailOn)
	if err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	pr, err := verifyPinPolicy(cmd, f, vp)
	if err != nil {
		return err
	}
	if _, err := f.src.Spec(cmd, args); err != nil {
		return err
	}
	lock, err := pin.Read(vp.Lock)
	if err != nil {
		return lockUnreadable(a, vp.Lock, err, asJSON, failOn)
	}
	load := func(context.Context) (*digest.Snapshot, error) {
		var err error
		if f.src.Listing.Resources, err = listsResources(vp.Resources, pr, lock); err != nil {
			return nil, err
		}
		return loadSource(cmd, a, &f.src, args)
	}
	p, err := checkPinned(cmd.Context(), a, f, pr, lock, vp.Lock, load)
	if err != nil {
		return err
	}
	if err := writePinReport(a, p.Report, asJSON, failOn); err != nil {
		return err
	}
	if p.Outside || p.Report.Failed(failOn) {
		return silentExit(exitFailed)
	}
	return nil
}

// checkPinned checks what the server serves (load) against the lock, and
// under a policy (pr not nil) that the lock stands (policy.Gate.CheckPinned).
func checkPinned(ctx context.Context, a *app, f *verifyFlags, pr *policy.Resolved, lock *pin.Lock, path string, load func(context.Context) (*digest.Snapshot, error)) (*policy.Pinned, error) {
	if pr != nil {
		g, err := policyGate(a, f, pr)
		if err != nil {
			return nil, err
		}
		return g.CheckPinned(ctx, lock, path, load)
	}
	snap, err := load(ctx)
	if err != nil {
		return nil, err
	}
	rep := lock.Check(snap)
	rep.Lock = path
	return &policy.Pinned{Report: rep}, nil
}

// verifyPinPolicy resolves verify-pin's --policy (nil without one): the
// lock is the policy's.
func verifyPinPolicy(cmd *cobra.Command, f *verifyFlags, vp *options.VerifyPinOptions) (*policy.Resolved, error) {
	var pr *policy.Resolved
	if f.pol.File != "" {
		var err error
		if pr, err = resolvePolicy(cmd, &f.pol); err != nil {
			return nil, err
		}
		vp.Lock = pr.Lock
		f.src.PolicyClientCapabilities = pr.ClientCapabilities
	} else if err := checkNames(&f.pol); err != nil {
		return nil, err
	} else if len(f.vo.Bundles) > 0 || f.vo.AllowCurrentTime {
		return nil, errors.New("--bundle and --allow-current-time re-verify a lock under --policy: give --policy FILE --name NAME too")
	}
	if vp.Lock == "" {
		return nil, errors.New("--lock FILE is required: the lock to check against")
	}
	return pr, nil
}

// lockUnreadable reports a lock that cannot be read (exit 2).
func lockUnreadable(a *app, path string, err error, asJSON bool, failOn pin.FailOn) error {
	rep := pin.LockErrorReport(path, err)
	if serr := pin.AppendStepSummary(a.getenv("GITHUB_STEP_SUMMARY"), rep, failOn); serr != nil {
		return serr
	}
	if asJSON {
		if werr := pin.WriteReportJSON(a.stdout, rep, failOn); werr != nil {
			return werr
		}
		return silentExit(exitError)
	}
	return err
}

// writePinReport writes a verify-pin report on stdout, as text or JSON, and
// to the GitHub step summary when there is one.
func writePinReport(a *app, rep *pin.Report, asJSON bool, failOn pin.FailOn) error {
	var err error
	if asJSON {
		err = pin.WriteReportJSON(a.stdout, rep, failOn)
	} else {
		err = pin.WriteReportText(a.stdout, rep)
	}
	if err != nil {
		return err
	}
	return pin.AppendStepSummary(a.getenv("GITHUB_STEP_SUMMARY"), rep, failOn)
}
