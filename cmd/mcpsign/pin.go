package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
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
  mcpsign verify-pin --lock notes.mcpsign.lock -- ./notes-server

  # Pin the static resources (resources/list) too: verify-pin and the proxy
  # then check them (they are approved by the lock, no signature covers them)
  mcpsign pin --lock notes.mcpsign.lock --tofu --resources pin -- ./notes-server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPin(cmd, a, &f, &po, args)
		},
	}
	fs := cmd.Flags()
	f.src.AddFlags(fs)
	f.out.AddFlags(fs)
	po.AddFlags(fs)
	f.vo.AddBundleFlags(fs)
	// pin verifies once, before it writes the lock (the proxy's help says
	// what the proxy does with it).
	fs.Lookup("bundle").Usage = "Sigstore bundle of the signed definitions (a file, or an https:// URL): verified against the server before the lock is written; repeat it with --policy for a threshold"
	f.trust.AddFlags(fs)
	f.id.AddFlags(fs)
	f.pol.AddFlags(fs)
	return cmd
}

func runPin(cmd *cobra.Command, a *app, f *verifyFlags, po *options.PinOptions, args []string) error {
	f.serveFromArgs(cmd, args)
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	if f.pol.File != "" {
		return runPinWithPolicy(cmd, a, f, po, asJSON, args)
	}
	if err := pinResources(f, po, nil); err != nil {
		return err
	}
	if err := checkNames(&f.pol); err != nil {
		return err
	}
	v, err := pinVerifier(cmd, f, po)
	if err != nil {
		return err
	}
	if err := auditevent.CheckLockOutputs(po.Lock, po.Force, po.Audit.Log); err != nil {
		return err
	}
	overrides, err := options.ReadOverrides(po.Capabilities)
	if err != nil {
		return err
	}
	if v == nil {
		return pinTOFU(cmd, a, f, asJSON, po, overrides, args, "mcpsign: WARNING: --tofu: trusting these definitions on first use. No signature vouches\n"+
			"mcpsign: WARNING: for them: if the server is already hostile, so is the lock. Read the capabilities\n"+
			"mcpsign: WARNING: below, and prefer a signed bundle (--bundle) when the publisher provides one.\n")
	}
	bundle, err := newBundleInput(a, f)
	if err != nil {
		return err
	}
	bundleJSON, err := bundle.early(cmd.Context())
	if err != nil {
		return err
	}
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return err
	}
	var res *verify.Result
	if bundle.FromServer {
		bundleJSON, err = bundle.Read(cmd.Context(), snap)
	}
	if err == nil {
		res, err = v.Verify(cmd.Context(), bundleJSON, snap)
	}
	if err != nil {
		return pinRefused(a, asJSON, res, err, "the bundle does not verify")
	}
	return writePinLock(cmd, a, asJSON, po, snap, pinbundle.ApprovalOf(res), [][]byte{bundleJSON}, overrides)
}

// pinVerifier checks pin's flags and returns the verifier of the bundle;
// nil for --tofu.
func pinVerifier(cmd *cobra.Command, f *verifyFlags, po *options.PinOptions) (*verify.Verifier, error) {
	switch {
	case po.Lock == "":
		return nil, errors.New("--lock FILE is required: where to write the lock")
	case po.TOFU && (f.vo.Bundle != "" || f.vo.BundleFromServer):
		return nil, errors.New("give --bundle (a verified signature) or --tofu (no signature), not both")
	case po.TOFU:
		for _, name := range []string{"key", "certificate-identity", "certificate-identity-regexp", "certificate-oidc-issuer", "certificate-oidc-issuer-regexp", "ca-roots"} {
			if cmd.Flags().Changed(name) {
				return nil, fmt.Errorf("--%s verifies a bundle; --tofu has none", name)
			}
		}
		return nil, nil
	case f.vo.Bundle == "" && !f.vo.BundleFromServer:
		return nil, errors.New("pin needs a verified bundle (--bundle FILE and the verify flags) or, knowingly, --tofu (trust on first use)")
	}
	return verifyPolicy(cmd, f, methodOf(f), false)
}

// pinTOFU pins what the server serves on trust (pin.MethodTOFU), after
// the warning.
func pinTOFU(cmd *cobra.Command, a *app, f *verifyFlags, asJSON bool, po *options.PinOptions, overrides capability.Overrides, args []string, warning string) error {
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return err
	}
	fmt.Fprint(a.stderr, warning)
	return writePinLock(cmd, a, asJSON, po, snap, pin.Approval{Method: pin.MethodTOFU}, nil, overrides)
}

// pinRefused reports a verification that did not let pin write the lock.
func pinRefused(a *app, asJSON bool, res *verify.Result, verr error, why string) error {
	if err := writeVerifyReport(a, asJSON, res, verr); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "mcpsign: nothing pinned: %s\n", why)
	return verifyExit(verr, true)
}

// writePinLock writes the lock of snap with approval, carrying proof, the
// bundles that proved a signed approval (nil for none; docs/LOCK.md
// "proof"), and reports it.
func writePinLock(cmd *cobra.Command, a *app, asJSON bool, po *options.PinOptions, snap *digest.Snapshot, approval pin.Approval, proof [][]byte, overrides capability.Overrides) error {
	lock, err := pin.NewLock(snap, approval)
	if err != nil {
		return err
	}
	if proof != nil {
		if err := lock.SetProof(proof); err != nil {
			return fmt.Errorf("the lock's proof: %w", err)
		}
	}
	if err := lock.SetCapabilities(overrides); err != nil {
		return fmt.Errorf("--capabilities: %w", err)
	}
	if err := auditevent.WriteLock(cmd.Context(), po.Lock, lock, po.Force, po.Audit.Log); err != nil {
		return err
	}
	if asJSON {
		return pin.WritePinnedJSON(a.stdout, po.Lock, lock)
	}
	return pin.WritePinnedText(a.stdout, po.Lock, lock)
}
