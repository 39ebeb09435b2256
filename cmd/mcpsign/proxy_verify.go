package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/proxy"
)

// proxyVerifyCommand is the hidden command mcpsign-proxy runs to verify.
const proxyVerifyCommand = "proxy-verify"

// serverAdvertisedFlag is the flag of proxy-verify by which mcpsign-proxy
// hands it the server's advertised capabilities (a file;
// proxycmd.Config.VerifyAdvertisedArg).
const serverAdvertisedFlag = "server-advertised"

// maxProxyVerifyInput bounds the snapshot read from stdin.
const maxProxyVerifyInput = 256 << 20

func newProxyVerifyCmd(a *app) *cobra.Command {
	var (
		po         options.ProxyOptions
		f          verifyFlags
		advertised string
	)
	cmd := &cobra.Command{
		Use:   proxyVerifyCommand + " --bundle FILE [the flags of 'mcpsign proxy']",
		Short: "Verify definitions for mcpsign-proxy (internal)",
		Long: `Verify the --bundle of a proxy against the definitions it observed, for
mcpsign-proxy, the small executable that runs 'mcpsign proxy' without linking
the verifier. It reads the definitions as a snapshot file (docs/SNAPSHOT.md)
on stdin, verifies the bundle exactly as 'mcpsign verify' does under the
flags (the flags of 'mcpsign proxy'; the proxy-only ones are ignored), and
prints the approval to record in the lock, as JSON, on stdout.

Exit codes: 0 verified; 1 the bundle does not verify; 2 bad input or flags.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxyVerify(cmd, a, &f, advertised)
		},
	}
	addProxyFlags(cmd.Flags(), &po, &f)
	cmd.Flags().StringVar(&advertised, serverAdvertisedFlag, "", "file of the capabilities the server advertised (from mcpsign-proxy)")
	return cmd
}

// runProxyVerify verifies the definitions on stdin as the proxy's flags f
// say (proxy.CommandVerifier) and prints the approval.
func runProxyVerify(cmd *cobra.Command, a *app, f *verifyFlags, advertised string) error {
	var verifyFn proxy.VerifyFunc
	if f.pol.File != "" {
		r, err := resolvePolicy(cmd, &f.pol)
		if err != nil {
			return err
		}
		if verifyFn, err = policyVerifyFunc(cmd.Context(), a, f, r); err != nil {
			return err
		}
		if verifyFn == nil {
			_, err = policyBundleInputs(a, f, r)
			return err
		}
	} else {
		v, err := verifyPolicy(cmd, f, methodOf(f), false)
		if err != nil {
			return err
		}
		bundle, err := newBundleInput(a, &f.vo)
		if err != nil {
			return err
		}
		verifyFn = bundle.verifier(v)
	}
	data, err := boundedfile.ReadAll(a.stdin, "the definitions on stdin", maxProxyVerifyInput, nil)
	if err != nil {
		return err
	}
	snap, err := digest.ParseSnapshot(data)
	if err != nil {
		return fmt.Errorf("the definitions: %w", err)
	}
	if advertised != "" {
		// What the server advertised beside its definitions
		// (proxy.CommandVerifier), bounded as its hello was.
		if snap.Advertised, err = boundedfile.Read(advertised, maxProxyVerifyInput, nil); err != nil {
			return fmt.Errorf("the advertised attestation: %w", err)
		}
	}
	appr, err := verifyFn(cmd.Context(), snap)
	if err != nil {
		return failed(err)
	}
	return json.NewEncoder(a.stdout).Encode(appr)
}
