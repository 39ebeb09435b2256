package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/verify"
)

func newPinCmd(a *app) *cobra.Command {
	var (
		f  verifyFlags
		po options.PinOptions
	)
	cmd := &cobra.Command{
		Use:   "pin SOURCE --lock FILE (--bundle FILE verify-flags | --tofu) [flags]",
		Short: "Approve a server's definitions and write them to a lock file",
		Long: `Approve what a server serves now and record it in a lock file, so that
'mcpsign verify-pin' and 'mcpsign proxy' can block any later change.

With --bundle the approval is a verified signature: the bundle is verified
against the server's definitions exactly as 'mcpsign verify' does (signature,
chain, transparency log, signing time, signer identity, statement, match), and
only then is the lock written, with the evidence: method, signer identity and
issuer, bundle digest and log entry. The method follows from the flags: --key
selects key, --ca-roots selects certificate, otherwise sigstore (keyless;
--certificate-identity and --certificate-oidc-issuer required).

With --tofu nothing vouches for the definitions: they are trusted on first use,
and the lock says so (method tofu). Later changes are still caught, but the
first state may already be hostile. Prefer a signed bundle.

The lock (docs/LOCK.md) holds every definition with its digest, the server,
protocol version and instructions, any --capabilities overrides, and the
approval, sealed by its lockDigest: a hand-edited lock is refused. It is written
atomically (temporary file, fsync, rename) under a file lock (FILE.lock); an
existing lock is kept unless --force.

The capabilities of every tool (read, write, delete, network, exec, unknown)
are shown with where they came from (annotations, name and description words;
docs/DRIFT.md). A tool marked ! can delete or execute: read it before you
approve. --capabilities caps.json ({"tools": {"NAME": ["read", ...]}}) replaces
the computed capabilities of the tools it names and is stored in the lock; an
override approves the pinned definition only.

SOURCE is what 'mcpsign digest' accepts: a snapshot file, a command line that
starts a stdio server, a Streamable HTTP URL, or the words after --.

Exit codes: 0 pinned; 1 the bundle did not verify; 2 bad usage, an existing
lock without --force, a server that could not be read, or a definition that
cannot be digested.`,
		Example: `  # Pin a release signed keylessly in GitHub Actions
  mcpsign pin --lock notes.mcpsign.lock --bundle mcp-definitions.sigstore.json \
    --certificate-identity https://github.com/acme/notes-mcp/.github/workflows/release.yml@refs/tags/v1.2.0 \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com \
    --trusted-root trusted_root.json -- npx -y @acme/notes-mcp@1.2.0

  # Pin a snapshot signed with a publisher key, offline
  mcpsign pin server.snapshot.json --lock notes.mcpsign.lock --bundle b.sigstore.json --key acme.pub.pem

  # Trust on first use, with a capability override, then check in CI
  mcpsign pin --lock notes.mcpsign.lock --tofu --capabilities caps.json -- ./notes-server
  mcpsign verify-pin --lock notes.mcpsign.lock -- ./notes-server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPin(cmd, a, &f, &po, args)
		},
	}
	fs := cmd.Flags()
	f.src.AddFlags(fs)
	f.out.AddFlags(fs)
	po.AddFlags(fs)
	f.vo.AddBundleFlags(fs)
	f.trust.AddFlags(fs)
	f.id.AddFlags(fs)
	f.pol.AddFlags(fs)
	return cmd
}

func runPin(cmd *cobra.Command, a *app, f *verifyFlags, po *options.PinOptions, args []string) error {
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	if f.pol.File != "" {
		return runPinWithPolicy(cmd, a, f, po, asJSON, args)
	}
	if err := checkNames(&f.pol); err != nil {
		return err
	}
	if po.Lock == "" {
		return errors.New("--lock FILE is required: where to write the lock")
	}
	var v *verify.Verifier
	switch {
	case po.TOFU && (f.vo.Bundle != "" || f.vo.BundleFromServer):
		return errors.New("give --bundle (a verified signature) or --tofu (no signature), not both")
	case po.TOFU:
		for _, name := range []string{"key", "certificate-identity", "certificate-identity-regexp", "certificate-oidc-issuer", "certificate-oidc-issuer-regexp", "ca-roots"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s verifies a bundle; --tofu has none", name)
			}
		}
	case f.vo.Bundle == "" && !f.vo.BundleFromServer:
		return errors.New("pin needs a verified bundle (--bundle FILE and the verify flags) or, knowingly, --tofu (trust on first use)")
	default:
		if v, err = verifyPolicy(cmd, f, methodOf(f), false); err != nil {
			return err
		}
	}
	if err := checkLockOutputs(po.Lock, po.Force, po.Audit.Log); err != nil {
		return err
	}
	overrides, err := options.ReadOverrides(po.Capabilities)
	if err != nil {
		return err
	}
	var bundleJSON []byte
	var bundle *bundleInput
	if v != nil {
		if bundle, err = newBundleInput(a, &f.vo); err != nil {
			return err
		}
		if bundleJSON, err = bundle.early(cmd.Context()); err != nil {
			return err
		}
	}
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return err
	}
	approval := pin.Approval{Method: pin.MethodTOFU}
	if v != nil {
		var res *verify.Result
		var verr error
		if bundle.fromServer {
			bundleJSON, verr = bundle.advertised(cmd.Context(), snap)
		}
		if verr == nil {
			res, verr = v.Verify(cmd.Context(), bundleJSON, snap)
		}
		if verr != nil {
			if asJSON {
				err = writeVerifyJSON(a.stdout, verify.NewReport(res, verr))
			} else {
				err = writeVerifyText(a.stdout, res, verr)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "mcpsign: nothing pinned: the bundle does not verify\n")
			return verifyExit(verr, true)
		}
		approval = pinbundle.ApprovalOf(res)
	} else {
		fmt.Fprintf(a.stderr, "mcpsign: WARNING: --tofu: trusting these definitions on first use. No signature vouches\n"+
			"mcpsign: WARNING: for them: if the server is already hostile, so is the lock. Read the capabilities\n"+
			"mcpsign: WARNING: below, and prefer a signed bundle (--bundle) when the publisher provides one.\n")
	}
	return writePinLock(cmd, a, asJSON, po, snap, approval, overrides)
}

// writePinLock writes the lock of snap with approval, and reports it.
func writePinLock(cmd *cobra.Command, a *app, asJSON bool, po *options.PinOptions, snap *digest.Snapshot, approval pin.Approval, overrides capability.Overrides) error {
	lock, err := pin.NewLock(snap, approval)
	if err != nil {
		return err
	}
	if err := lock.SetCapabilities(overrides); err != nil {
		return fmt.Errorf("--capabilities: %w", err)
	}
	rec := &approvalRecord{log: po.Audit.Log, before: existingLock(po.Audit.Log, po.Lock)}
	err = lock.WriteWith(cmd.Context(), po.Lock, pin.WriteOptions{Overwrite: po.Force, Before: rec.record(cmd.Context())})
	if err := rec.result(err); err != nil {
		return err
	}
	if asJSON {
		return writePinJSON(a.stdout, po.Lock, lock)
	}
	return writePinText(a.stdout, po.Lock, lock)
}

func writePinText(w io.Writer, path string, l *pin.Lock) error {
	counts := map[digest.Kind]int{}
	for _, d := range l.Definitions {
		counts[d.Kind]++
	}
	ins := "no instructions"
	if l.Instructions != nil {
		ins = "instructions"
	}
	fmt.Fprintf(w, "pinned %s %s to %s: %s, %s\n",
		textsafe.Quote(l.Server.Name), textsafe.Quote(l.Server.Version), textsafe.Escape(path),
		digest.CountText(func(k digest.Kind) int { return counts[k] }), ins)
	fmt.Fprintf(w, "approval: %s\nlockDigest: %s\n", approvalText(&l.Approval), l.LockDigest)
	if counts[digest.KindTool] > 0 {
		fmt.Fprintf(w, "\ncapabilities (! = can delete or execute):\n")
		return capability.WriteText(w, l.ToolCapabilities())
	}
	return nil
}

func approvalText(a *pin.Approval) string {
	switch a.Method {
	case pin.MethodTOFU:
		return "tofu (trusted on first use; no signature)"
	case verify.MethodKey:
		return "key " + textsafe.Escape(a.Identity)
	}
	s := fmt.Sprintf("%s, signed by %s", a.Method, textsafe.Quote(a.Identity))
	if a.Issuer != "" {
		s += ", issuer " + textsafe.Quote(a.Issuer)
	}
	if a.Tlog != nil {
		s += fmt.Sprintf(", log index %d", a.Tlog.LogIndex)
	}
	return s
}

// pinJSON is the stable JSON output of 'mcpsign pin' (docs/LOCK.md).
type pinJSON struct {
	ReportVersion int                         `json:"reportVersion"`
	Lock          string                      `json:"lock"`
	LockDigest    string                      `json:"lockDigest"`
	Server        digest.ServerInfo           `json:"server"`
	Approval      pin.Approval                `json:"approval"`
	Counts        map[string]int              `json:"counts"`
	Capabilities  map[string]*capability.Tool `json:"capabilities"`
}

func writePinJSON(w io.Writer, path string, l *pin.Lock) error {
	out := pinJSON{ReportVersion: reportVersion, Lock: path, LockDigest: l.LockDigest, Server: l.Server, Approval: l.Approval,
		Counts: map[string]int{}, Capabilities: l.ToolCapabilities()}
	for _, k := range digest.Kinds {
		out.Counts[k.ListMember()] = 0
	}
	for _, d := range l.Definitions {
		out.Counts[d.Kind.ListMember()]++
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
