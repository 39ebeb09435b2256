package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
)

// proxyVerifyCommand is the hidden command mcpsign-proxy runs to verify.
const proxyVerifyCommand = "proxy-verify"

// serverAdvertisedFlag is the flag of proxy-verify by which mcpsign-proxy
// hands it the server's advertised capabilities (a file;
// proxycmd.Config.VerifyAdvertisedArg).
const serverAdvertisedFlag = "server-advertised"

// servedAddressesFlag is the flag of proxy-verify by which mcpsign proxy
// hands it the addresses the bundle URL its server advertises may be
// fetched from (source.ServedAddresses of the server, by name:
// netguard.Scope.String); without it, public addresses only.
const servedAddressesFlag = "served-addresses"

func newProxyVerifyCmd(a *app) *cobra.Command {
	var (
		po         options.ProxyOptions
		f          verifyFlags
		advertised string
		served     string
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
			s, err := servedAddressesOf(served, f.vo.AllowPrivateBundles)
			if err != nil {
				return err
			}
			f.served = s
			return runProxyVerify(cmd, a, &f, advertised)
		},
	}
	addProxyFlags(cmd.Flags(), &po, &f)
	cmd.Flags().StringVar(&advertised, serverAdvertisedFlag, "", "file of the capabilities the server advertised (from mcpsign-proxy)")
	cmd.Flags().StringVar(&served, servedAddressesFlag, "", "the addresses the bundle URL the server advertises may be fetched from: public, loopback, private or any (from mcpsign proxy)")
	return cmd
}

// servedAddressesOf reads --served-addresses (public when not given) and
// --allow-private-bundles (every address) of proxy-verify.
func servedAddressesOf(served string, allowPrivate bool) (source.AddressScope, error) {
	if allowPrivate {
		return source.AnyAddress, nil
	}
	if served == "" {
		return source.PublicAddresses, nil
	}
	s, err := netguard.ParseScope(served)
	if err != nil {
		return s, fmt.Errorf("--%s: %w", servedAddressesFlag, err)
	}
	return s, nil
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
		bundle, err := newBundleInput(a, f)
		if err != nil {
			return err
		}
		verifyFn = bundle.verifier(v)
	}
	err := proxy.ServeVerifier(cmd.Context(), a.stdin, advertised, verifyFn, a.stdout)
	var ve *proxy.VerificationError
	if errors.As(err, &ve) {
		return failed(ve.Err)
	}
	return err
}
