package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
)

// maxStepSummaryBytes is what verify-pin appends to a GitHub job summary at
// most: GitHub refuses a step summary over 1 MiB.
const maxStepSummaryBytes = 1000 << 10

func newVerifyPinCmd(a *app) *cobra.Command {
	var (
		src options.SourceOptions
		out options.OutputOptions
		vp  options.VerifyPinOptions
		pol options.PolicyOptions
		// bundles re-verify the lock's approval under --policy (with the
		// chain checked at the current time when they have no timestamp).
		bundles     []string
		currentTime bool
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
			asJSON, err := out.JSON()
			if err != nil {
				return err
			}
			failOn, err := pin.ParseFailOn(vp.FailOn)
			if err != nil {
				return fmt.Errorf("--fail-on: %w", err)
			}
			var pr *policy.Resolved
			if pol.File != "" {
				if pr, err = resolvePolicy(cmd, &pol); err != nil {
					return err
				}
				vp.Lock = pr.Lock
				src.PolicyClientCapabilities = pr.ClientCapabilities
			} else if err := checkNames(&pol); err != nil {
				return err
			} else if len(bundles) > 0 || currentTime {
				return errors.New("--bundle and --allow-current-time re-verify a lock under --policy: give --policy FILE --name NAME too")
			}
			if vp.Lock == "" {
				return errors.New("--lock FILE is required: the lock to check against")
			}
			if _, err := src.Spec(cmd, args); err != nil {
				return err
			}
			lock, err := pin.Read(vp.Lock)
			if err != nil {
				rep := pin.LockErrorReport(vp.Lock, err)
				if serr := appendStepSummary(a, rep, failOn); serr != nil {
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
			pf := &verifyFlags{vo: options.VerifyOptions{Bundles: bundles, AllowCurrentTime: currentTime}}
			withServer := false // the lock is re-verified with the server's bundle
			if pr != nil {
				var out *lockOutsidePolicy
				switch err := checkLockInForce(cmd.Context(), a, pf, pr, lock, nil); {
				case errors.Is(err, errNeedsServer):
					withServer = true
				case errors.As(err, &out):
					// Blocked at start, before the server runs, whatever --fail-on says.
					if err := writePinReport(a, outsidePolicyReport(vp.Lock, out), asJSON, failOn); err != nil {
						return err
					}
					return silentExit(exitFailed)
				case err != nil:
					return err
				}
			}
			mode, err := resourcesMode(vp.Resources, pr, lock, false)
			if err != nil {
				return err
			}
			src.Resources = mode == proxy.ResourcesPin
			snap, err := loadSource(cmd, a, &src, args)
			if err != nil {
				return err
			}
			rep := lock.Check(snap)
			rep.Lock = vp.Lock
			if withServer {
				err := errors.New("the server serves other definitions than the lock, so its bundle cannot re-verify the lock")
				if !rep.Failed(pin.FailOnDrift) {
					err = checkLockInForce(cmd.Context(), a, pf, pr, lock, snap)
				}
				if err != nil {
					// It fails whatever --fail-on says.
					var out *lockOutsidePolicy
					if !errors.As(err, &out) {
						out = &lockOutsidePolicy{Rule: policy.RuleLockUnproven, Err: &policy.LockError{Rule: policy.RuleLockUnproven,
							Reason: "the lock records an approval the policy cannot take from the record alone: " + err.Error()}}
					}
					rep.Findings = append(rep.Findings, outsidePolicyReport(vp.Lock, out).Findings...)
					if err := writePinReport(a, rep, asJSON, failOn); err != nil {
						return err
					}
					return silentExit(exitFailed)
				}
			}
			if err := writePinReport(a, rep, asJSON, failOn); err != nil {
				return err
			}
			if rep.Failed(failOn) {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	src.AddFlags(fs)
	out.AddFlags(fs)
	vp.AddFlags(fs)
	pol.AddFlags(fs)
	fs.StringArrayVar(&bundles, "bundle", nil, "with --policy: a bundle (file or https:// URL) that re-verifies a signed lock's approval (a threshold: repeat it, the lock's own bundle first); default the policy's bundle")
	fs.BoolVar(&currentTime, "allow-current-time", false, "with --policy: re-verifying a certificate lock's bundle that has no timestamp, check the chain at the current time")
	return cmd
}

// appendStepSummary appends the report as Markdown to $GITHUB_STEP_SUMMARY
// when it is set (GitHub Actions), at most maxStepSummaryBytes.
func appendStepSummary(a *app, rep *pin.Report, failOn pin.FailOn) error {
	path := a.getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := pin.WriteReportMarkdown(&b, rep, failOn); err != nil {
		return err
	}
	data := b.Bytes()
	if len(data) > maxStepSummaryBytes {
		data = append(bytes.Clone(data[:maxStepSummaryBytes]), "\n\n… (report truncated: run verify-pin locally for the whole diff)\n"...)
		data = bytes.ToValidUTF8(data, nil)
	}
	data = append(data, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	return f.Close()
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
	return appendStepSummary(a, rep, failOn)
}
