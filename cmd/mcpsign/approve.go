package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

func newApproveCmd(a *app) *cobra.Command {
	var (
		src options.SourceOptions
		ao  options.ApproveOptions
		pol options.PolicyOptions
	)
	cmd := &cobra.Command{
		Use:   "approve SOURCE --lock FILE --reason TEXT --expect SET=DIGEST... [flags]",
		Short: "Approve, after review, a change to a server's definitions that no signature vouches for",
		Long: `Show how a server now differs from its lock (the report of 'mcpsign
verify-pin', server text escaped) and approve exactly what was shown: the lock
is replaced by one of the definitions listed now, recorded as a manual approval
with the reason, the approver (--approver, or the OS user), the previous lock's
digest and the reviewed --source-revision (docs/LOCK.md).

The server is listed once. What it serves must have exactly the digests the
reviewer saw: --expect names the Set Digest of every kind that changed
(tools, prompts, resourceTemplates) and the instructions digest if they
changed (instructions=none when they were removed), as the report prints them;
every kind not named must be unchanged from the lock. If the server now serves
anything else (it changed again between review and approval), nothing is
approved, the lock is left as it is, and the command exits 1. Run it without
--expect (and without --reason) to review: it prints the report and the
digests to expect, approves nothing and exits 0.

At a terminal it asks once before writing; without one it needs --yes. The lock
is replaced under its file lock, and only if it is still the lock that was read.
A proxy running on the old lock does not adopt a manual approval from disk
(docs/PROXY.md): restart it. With --audit-log FILE the approval (or the refusal)
is appended to the audit log (docs/AUDIT.md).

With --policy FILE --name NAME the lock and the audit log are the policy's,
and a policy that approves only signed definitions ("rollForward": "signed"
and "unsigned": "refuse") refuses the approval before the server is listed
(policy-lock-method-refused, exit 1): the proxy and verify-pin would refuse
the manual lock under it (docs/POLICY.md "The lock in force").

Exit codes: 0 approved, nothing to approve, or a review (no --expect: nothing
approved); 1 the server does not serve what
--expect says, or the approval was declined; 2 bad usage, a bad lock, or a
server that could not be read.`,
		Example: `  # Review the change
  mcpsign approve --lock notes.mcpsign.lock --reason "release 1.3 reviewed" -- ./notes-server
  # Approve exactly what was shown
  mcpsign approve --lock notes.mcpsign.lock --reason "release 1.3 reviewed (PR 42)" \
    --source-revision 1f2e3d4 --expect tools=sha256:… --yes -- ./notes-server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := approvePolicy(cmd, &src, &ao, &pol); err != nil {
				return err
			}
			return runApprove(cmd, a, &src, &ao, args)
		},
	}
	fs := cmd.Flags()
	src.AddFlags(fs)
	ao.AddFlags(fs)
	pol.AddFlags(fs)
	return cmd
}

// approvePolicy takes the lock and the audit log from --policy, and
// refuses a manual approval the policy would not let stand.
func approvePolicy(cmd *cobra.Command, src *options.SourceOptions, ao *options.ApproveOptions, pol *options.PolicyOptions) error {
	if pol.File == "" {
		return checkNames(pol)
	}
	r, err := resolvePolicy(cmd, pol)
	if err != nil {
		return err
	}
	// The lock a manual approval writes must stand under the policy, or
	// the proxy would refuse it at start.
	var le *policy.LockError
	if err := r.CheckApproval(pin.Approval{Method: pin.MethodManual}); errors.As(err, &le) {
		return withCode(exitFailed, fmt.Errorf("nothing approved: %s: %s", le.Rule, le.Reason))
	}
	ao.Lock, ao.Audit.Log = r.Lock, r.Audit
	src.PolicyClientCapabilities = r.ClientCapabilities
	return nil
}

func runApprove(cmd *cobra.Command, a *app, src *options.SourceOptions, ao *options.ApproveOptions, args []string) error {
	approver, want, err := approveInputs(cmd, a, src, ao, args)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	held, err := auditevent.ReadLock(ctx, ao.Lock, ao.Audit.Log)
	if err != nil {
		return err
	}
	if src.Listing.Resources, err = listsResources(ao.Resources, nil, held); err != nil {
		return err
	}
	snap, err := loadSource(cmd, a, src, args)
	if err != nil {
		return err
	}
	change, err := pin.NewChange(held, snap)
	if err != nil {
		return fmt.Errorf("nothing approved: %w", err)
	}
	rep := held.Check(snap)
	rep.Lock = ao.Lock
	if err := pin.WriteReportText(a.stdout, rep); err != nil {
		return err
	}
	if change.None() {
		fmt.Fprintf(a.stdout, "\nnothing to approve: the server serves the definitions the lock approves\n")
		return nil
	}
	fmt.Fprintf(a.stdout, "\nto approve what is shown: --expect %s\n", strings.Join(change.Expect(), " --expect "))
	if len(ao.Expect) == 0 {
		// The review (docs/LOCK.md): the report and the digests to
		// expect; nothing is approved, and that is no failure.
		fmt.Fprintf(a.stdout, "nothing approved (the review): to approve what is shown, run it again with --reason TEXT and each digest above as --expect\n")
		return nil
	}
	// What was listed must be exactly what the reviewer saw.
	if stale := change.Stale(want.Sets, want.Instructions); len(stale) > 0 {
		if aerr := auditevent.RefuseStale(ctx, ao.Audit.Log, held, snap, stale); aerr != nil {
			return aerr
		}
		lines := make([]string, len(stale))
		for i, s := range stale {
			lines[i] = "  " + s
		}
		return failed(textsafe.WithLines(errors.New("nothing approved; the lock is left as it is: the server does not serve what --expect says (it changed since the review?):"), lines...))
	}
	if !ao.Yes && !confirm(a, fmt.Sprintf("approve these definitions into %s as %s? [y/N] ", textsafe.Escape(ao.Lock), textsafe.Quote(approver))) {
		return failed(errors.New("nothing approved: declined"))
	}
	return writeApproval(ctx, a, ao, held, snap, approver)
}

// approveInputs checks approve's flags before anything is read: the
// approver (--approver, else the OS user) and the --expect digests.
func approveInputs(cmd *cobra.Command, a *app, src *options.SourceOptions, ao *options.ApproveOptions, args []string) (string, *pin.Expected, error) {
	if ao.Lock == "" {
		return "", nil, errors.New("--lock FILE is required: the lock to approve the change into")
	}
	if strings.TrimSpace(ao.Reason) == "" && len(ao.Expect) > 0 {
		return "", nil, errors.New("--reason TEXT is required: why the change is approved")
	}
	want, err := options.ParseExpect(ao.Expect)
	if err != nil {
		return "", nil, err
	}
	approver := ao.Approver
	if approver == "" {
		if approver, err = osUser(a); err != nil {
			return "", nil, fmt.Errorf("no --approver given and the OS user is unknown: %w", err)
		}
	}
	if !ao.Yes && !a.isTerminal() && len(ao.Expect) > 0 {
		return "", nil, errors.New("no terminal to ask for the approval: give --yes")
	}
	if _, err := src.Spec(cmd, args); err != nil {
		return "", nil, err
	}
	if err := auditevent.CheckLockOutputs(ao.Lock, true, ao.Audit.Log); err != nil {
		return "", nil, err
	}
	return approver, want, nil
}

// confirm asks question at the terminal (approveInputs refused without
// one) and reports a yes.
func confirm(a *app, question string) bool {
	fmt.Fprint(a.stderr, question)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

// writeApproval replaces the held lock by the manual approval of snap,
// recorded in the audit log first.
func writeApproval(ctx context.Context, a *app, ao *options.ApproveOptions, held *pin.Lock, snap *digest.Snapshot, approver string) error {
	next, err := auditevent.ApproveManual(ctx, ao.Lock, ao.Audit.Log, held, snap, pin.Approval{Reason: ao.Reason, Approver: approver, SourceRevision: ao.SourceRevision})
	switch {
	case next == nil:
		return fmt.Errorf("nothing approved: %w", err)
	case errors.Is(err, pin.ErrLockChanged):
		// Said in the command's words, and still with the audit log's
		// record of the approval when there is one.
		changed := errors.New("nothing approved: the lock changed since it was read; run approve again")
		var ue *auditevent.UnwrittenLockError
		if errors.As(err, &ue) {
			return &auditevent.UnwrittenLockError{Log: ue.Log, Lock: ue.Lock, Err: changed}
		}
		return changed
	case err != nil:
		return err
	}
	fmt.Fprintf(a.stdout, "\napproved into %s: %s\nlockDigest: %s (previous %s)\n", textsafe.Escape(ao.Lock), pin.ManualText(&next.Approval), next.LockDigest, held.LockDigest)
	return nil
}

// osUser names the OS user: the account name, else $USER.
func osUser(a *app) (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := a.getenv("USER"); u != "" {
		return u, nil
	}
	return "", errors.New("neither the account database nor $USER names it")
}
