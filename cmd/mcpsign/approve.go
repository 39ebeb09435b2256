package main

import (
	"bufio"
	"errors"
	"fmt"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
)

// Finding of a refused approval in the audit log (docs/AUDIT.md).
const findingApproveStale = "approve-expect-mismatch"

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
--expect to see the report and the digests to expect.

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

Exit codes: 0 approved (or nothing to approve); 1 the server does not serve what
--expect says, or the approval was declined; 2 bad usage, a bad lock, or a
server that could not be read.`,
		Example: `  # Review the change
  mcpsign approve --lock notes.mcpsign.lock --reason "release 1.3 reviewed" -- ./notes-server
  # Approve exactly what was shown
  mcpsign approve --lock notes.mcpsign.lock --reason "release 1.3 reviewed (PR 42)" \
    --source-revision 1f2e3d4 --expect tools=sha256:… --yes -- ./notes-server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pol.File != "" {
				r, err := resolvePolicy(cmd, &pol)
				if err != nil {
					return err
				}
				// The lock a manual approval writes must stand under the
				// policy, or the proxy would refuse it at start.
				var le *policy.LockError
				if err := r.CheckApproval(pin.Approval{Method: pin.MethodManual}); errors.As(err, &le) {
					return withCode(exitFailed, fmt.Errorf("nothing approved: %s: %s", le.Rule, le.Reason))
				}
				ao.Lock, ao.Audit.Log = r.Lock, r.Audit
				src.PolicyClientCapabilities = r.ClientCapabilities
			} else if err := checkNames(&pol); err != nil {
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

func runApprove(cmd *cobra.Command, a *app, src *options.SourceOptions, ao *options.ApproveOptions, args []string) error {
	if ao.Lock == "" {
		return errors.New("--lock FILE is required: the lock to approve the change into")
	}
	if strings.TrimSpace(ao.Reason) == "" {
		return errors.New("--reason TEXT is required: why the change is approved")
	}
	want, err := options.ParseExpect(ao.Expect)
	if err != nil {
		return err
	}
	approver := ao.Approver
	if approver == "" {
		if approver, err = osUser(a); err != nil {
			return fmt.Errorf("no --approver given and the OS user is unknown: %w", err)
		}
	}
	asking := !ao.Yes
	if asking && !a.isTerminal() && len(ao.Expect) > 0 {
		return errors.New("no terminal to ask for the approval: give --yes")
	}
	if _, err := src.Spec(cmd, args); err != nil {
		return err
	}
	if err := checkLockOutputs(ao.Lock, true, ao.Audit.Log); err != nil {
		return err
	}
	ctx := cmd.Context()
	held, err := pin.Read(ao.Lock)
	if err != nil {
		if aerr := auditevent.Append(ctx, ao.Audit.Log, auditevent.Refusal(audit.LockRefused, nil, nil, []string{auditevent.LockFinding(err)})); aerr != nil {
			return errors.Join(err, aerr)
		}
		return err
	}
	mode, err := resourcesMode(ao.Resources, nil, held, false)
	if err != nil {
		return err
	}
	src.Resources = mode == proxy.ResourcesPin
	snap, err := loadSource(cmd, a, src, args)
	if err != nil {
		return err
	}
	if err := digest.Compute(snap).Err(); err != nil {
		return fmt.Errorf("nothing approved: a definition has no digest: %w", err)
	}
	servedRes, pinnedRes, err := approveResourceSets(snap, held)
	if err != nil {
		return fmt.Errorf("nothing approved: %w", err)
	}
	rep := held.Check(snap)
	rep.Lock = ao.Lock
	if err := pin.WriteReportText(a.stdout, rep); err != nil {
		return err
	}
	sets, ins := auditevent.OfSnapshot(snap)
	lockSets, lockIns := auditevent.OfLock(held)
	if *sets == *lockSets && ins == lockIns && servedRes == pinnedRes {
		fmt.Fprintf(a.stdout, "\nnothing to approve: the server serves the definitions the lock approves\n")
		return nil
	}
	served := map[digest.Kind]string{digest.KindTool: sets.Tools, digest.KindPrompt: sets.Prompts, digest.KindResourceTemplate: sets.ResourceTemplates}
	pinned := map[digest.Kind]string{digest.KindTool: lockSets.Tools, digest.KindPrompt: lockSets.Prompts, digest.KindResourceTemplate: lockSets.ResourceTemplates}
	fmt.Fprintf(a.stdout, "\nto approve what is shown:")
	for _, k := range digest.Kinds {
		if served[k] != pinned[k] {
			fmt.Fprintf(a.stdout, " --expect %s=%s", k.ListMember(), served[k])
		}
	}
	if servedRes != pinnedRes {
		fmt.Fprintf(a.stdout, " --expect %s=%s", digest.KindResource.ListMember(), servedRes)
	}
	if ins != lockIns {
		fmt.Fprintf(a.stdout, " --expect instructions=%s", orNoneDigest(ins))
	}
	fmt.Fprintln(a.stdout)
	if len(ao.Expect) == 0 {
		return withCode(exitFailed, errors.New("nothing approved: give --expect with the digests above to approve what was shown"))
	}

	// What was listed must be exactly what the reviewer saw.
	var stale []string
	for _, k := range digest.Kinds {
		exp, named := want.Sets[k]
		if !named {
			exp = pinned[k]
		}
		if served[k] != exp {
			stale = append(stale, fmt.Sprintf("%s: the server serves %s, expected %s", k.ListMember(), served[k], exp))
		}
	}
	if exp, named := want.Sets[digest.KindResource]; named || servedRes != pinnedRes {
		if !named {
			exp = pinnedRes
		}
		if servedRes != exp {
			stale = append(stale, fmt.Sprintf("%s: the server serves %s, expected %s", digest.KindResource.ListMember(), servedRes, exp))
		}
	}
	expIns := lockIns
	if want.Instructions != nil {
		expIns = *want.Instructions
	}
	if ins != expIns {
		stale = append(stale, fmt.Sprintf("instructions: the server serves %s, expected %s", orNoneDigest(ins), orNoneDigest(expIns)))
	}
	if len(stale) > 0 {
		ids := make([]string, len(stale))
		for i, s := range stale {
			ids[i] = findingApproveStale + " " + s[:strings.IndexByte(s, ':')]
		}
		if aerr := auditevent.Append(ctx, ao.Audit.Log, auditevent.Refusal(audit.LockRefused, held, snap, ids)); aerr != nil {
			return aerr
		}
		return failed(fmt.Errorf("nothing approved; the lock is left as it is: the server does not serve what --expect says (it changed since the review?):\n  %s", strings.Join(stale, "\n  ")))
	}
	if asking { // at a terminal: refused above without one
		fmt.Fprintf(a.stderr, "approve these definitions into %s as %s? [y/N] ", textsafe.Escape(ao.Lock), textsafe.Quote(approver))
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return failed(errors.New("nothing approved: declined"))
		}
	}
	next, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodManual, Reason: ao.Reason, Approver: approver,
		PreviousLockDigest: held.LockDigest, SourceRevision: ao.SourceRevision})
	if err != nil {
		return fmt.Errorf("nothing approved: %w", err)
	}
	next.CarryOverrides(held)
	next.CarryResources(held)
	rec := &approvalRecord{log: ao.Audit.Log, before: held}
	err = pin.Update(ctx, ao.Lock, func(cur *pin.Lock) (*pin.Lock, error) {
		if cur == nil || cur.LockDigest != held.LockDigest {
			return nil, errors.New("nothing approved: the lock changed since it was read; run approve again")
		}
		if record := rec.record(ctx); record != nil {
			if err := record(next); err != nil {
				return nil, err
			}
		}
		return next, nil
	})
	if err := rec.result(err); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\napproved into %s: %s\nlockDigest: %s (previous %s)\n", textsafe.Escape(ao.Lock), pin.ManualText(&next.Approval), next.LockDigest, held.LockDigest)
	return nil
}

// approveResourceSets returns the Set Digest of the static resources the
// server serves (the held lock's when snap did not list them: not judged)
// and of those the held lock approves (none when it records none). A
// resource without a digest is an error: it cannot be approved.
func approveResourceSets(snap *digest.Snapshot, held *pin.Lock) (served, pinned string, err error) {
	pinned = digest.EmptySetDigest
	if held.Resources != nil {
		pinned = held.ResourceSet
	}
	rr := digest.ComputeResources(snap)
	if rr == nil {
		return pinned, pinned, nil
	}
	if err := rr.Err(); err != nil {
		return "", "", fmt.Errorf("a resource has no digest: %w", err)
	}
	return rr.Sets[digest.KindResource], pinned, nil
}

// orNoneDigest writes an absent digest ("") as none.
func orNoneDigest(d string) string {
	if d == "" {
		return "none"
	}
	return d
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
