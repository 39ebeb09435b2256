package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/interrupt"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/source/progress"
)

func newRegistryCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "registry",
		Short: "Verify the entries of an MCP registry, serve what verified, or write the hint a publisher lists",
		Long: `Verify the servers an MCP registry lists against a policy, or write into a
server.json where its attestation is (docs/REGISTRY.md).`,
	}
	c.AddCommand(newRegistryVerifyCmd(a), newRegistryHintCmd(a), newRegistryServeCmd(a))
	return c
}

type registryVerifyFlags struct {
	policy, verifiedOut, shard string
	workers                    int
	offline, allowPrivate      bool
	out                        options.OutputOptions
}

func newRegistryVerifyCmd(a *app) *cobra.Command {
	var f registryVerifyFlags
	c := &cobra.Command{
		Use:   "verify SOURCE --policy FILE",
		Short: "Verify every entry of a registry, a dump or a file of server.json documents",
		Long: `Verify every server version SOURCE lists: a registry base URL (the generic
registry API, /v0.1/servers paged by cursor, or /v0), a file of server.json
documents, API entries or pages (JSON Lines, or a JSON array), or - for
standard input. Each entry's bundles are fetched (https only, bounded, digest
first), verified under the policy server that names the entry or its namespace
(NAMESPACE/*), and their statements must bind the entry's packages and version.

Exit codes: 0 every entry verified; 1 some entry did not (or no policy server
matched it); 2 usage, input, I/O or connection error (a registry that loops
its cursor or floods pages), or the run was stopped (SIGTERM); 130 stopped
by SIGINT (Ctrl-C). A stopped run leaves --verified-out as it was.
docs/REGISTRY.md, docs/JSON.md.`,
		Example: `  # Verify a registry under a policy, one JSON line per entry
  mcpsign registry verify https://registry.example.com --policy policy.json --format json

  # One shard of four, writing what passes as a dump a sub-registry ingests
  mcpsign registry verify dump.json --policy policy.json --shard 0/4 --verified-out verified.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRegistryVerify(cmd, a, &f, args[0]) },
	}
	fs := c.Flags()
	fs.StringVar(&f.policy, "policy", "", "the policy file (docs/POLICY.md); required")
	fs.StringVar(&f.verifiedOut, "verified-out", "", "write the entries that verified to `FILE` (a JSON array of server.json, each with _meta[\"dev.mcpsign/verified\"])")
	fs.StringVar(&f.shard, "shard", "", "verify only shard `I/N` of the entries, partitioned by name (0 <= I < N)")
	fs.IntVar(&f.workers, "workers", 0, "entries verified in parallel (default: the number of CPUs)")
	fs.BoolVar(&f.offline, "offline", false, "never fetch the trusted root through TUF: use the policy's file or the TUF cache")
	fs.BoolVar(&f.allowPrivate, "allow-private-bundles", false, "fetch bundles from loopback, private and link-local addresses too (refused by default; loopback is allowed when SOURCE is a registry on a loopback host)")
	f.out.AddFlags(fs)
	c.MarkFlagRequired("policy")
	return c
}

func runRegistryVerify(cmd *cobra.Command, a *app, f *registryVerifyFlags, src string) error {
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	var shard registry.Shard
	if f.shard != "" {
		if shard, err = registry.ParseShard(f.shard); err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
	}
	pf, err := policy.Read(f.policy)
	if err != nil {
		return err
	}
	v, err := registry.New(registry.Options{Policy: pf, HTTPClient: a.httpClient,
		BundleAddresses: bundleAddresses(f.allowPrivate), SourceHost: registry.SourceHost(src),
		DeciderOptions: policy.DeciderOptions{Offline: f.offline}})
	if err != nil {
		return err
	}
	defer v.Close()
	o := registry.SourceOptions{RunOptions: registry.RunOptions{Workers: f.workers, Shard: shard},
		Client: registry.Client{HTTPClient: a.httpClient}, Stdin: a.stdin, VerifiedOut: f.verifiedOut}
	terminal := a.stderrTerminal()
	tick, done := func(string, int) {}, func() {}
	if terminal {
		tick, done = progress.Terminal(a.stderr)
	}
	n, emit := 0, registry.WriteResults(a.stdout, asJSON)
	o.Emit = func(r *registry.Result) error {
		n++
		tick(fmt.Sprintf("%d entries verified", n), 0)
		if h := flagHint(r.Err()); h != "" && !strings.Contains(r.Reason, h) {
			r.Reason += " (" + h + ")"
		}
		return emit(r)
	}
	sum, err := v.RunSource(cmd.Context(), src, o)
	done()
	var de *registry.DumpError
	switch {
	case errors.As(err, &de):
		return fmt.Errorf("--verified-out: %w", de.Err)
	case errors.Is(err, registry.ErrInterrupted):
		fmt.Fprint(a.stderr, sum.Table())
		if f.verifiedOut != "" {
			err = fmt.Errorf("%w; --verified-out %s left as it was", err, f.verifiedOut)
		}
		return withCode(interruptedCode(cmd.Context()), err)
	case err != nil:
		return err
	}
	if !asJSON || terminal {
		fmt.Fprint(a.stderr, sum.Table())
	}
	if sum.Verified != sum.Entries {
		return silentExit(exitFailed)
	}
	return nil
}

// interruptedCode is the exit code of a run stopped by ctx: 130 (128 +
// SIGINT) when an interrupt signal stopped it, 2 otherwise (SIGTERM, a
// deadline) (docs/REGISTRY.md, "Exit codes").
func interruptedCode(ctx context.Context) int {
	var ie *interrupt.Error
	if errors.As(context.Cause(ctx), &ie) && ie.Signal == os.Interrupt {
		return 130
	}
	return exitError
}

type registryHintFlags struct {
	urls, digests []string
	output        string
}

func newRegistryHintCmd(a *app) *cobra.Command {
	var f registryHintFlags
	c := &cobra.Command{
		Use:   "hint SERVER_JSON --bundle-url URL --bundle-digest sha256:HEX",
		Short: "Write where the attestation is into a server.json, keeping every other byte",
		Long: `Write _meta["io.modelcontextprotocol.registry/publisher-provided"]["dev.mcpsign/attestation"]
into SERVER_JSON (in place, or to -o): one {bundleUrl, bundleDigest}, or a list
when --bundle-url is given several times (several signers). Every other byte of
the file is kept. docs/REGISTRY.md, docs/PUBLISHING.md.`,
		Example: `  mcpsign registry hint server.json \
    --bundle-url https://github.com/acme/notes/releases/download/v1.2.0/mcp-definitions.sigstore.json \
    --bundle-digest sha256:$(sha256sum mcp-definitions.sigstore.json | cut -d' ' -f1)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRegistryHint(a, &f, args[0]) },
	}
	c.Flags().StringArrayVar(&f.urls, "bundle-url", nil, "the https URL of a bundle (repeat for several)")
	c.Flags().StringArrayVar(&f.digests, "bundle-digest", nil, "its digest, sha256:HEX of the bundle's bytes (one per --bundle-url, in order)")
	c.Flags().StringVarP(&f.output, "output", "o", "", "write to `FILE` (- for standard output) instead of in place")
	return c
}

func runRegistryHint(a *app, f *registryHintFlags, path string) error {
	if len(f.urls) == 0 || len(f.urls) != len(f.digests) {
		return fmt.Errorf("give --bundle-url and --bundle-digest, as many of each (%d and %d)", len(f.urls), len(f.digests))
	}
	ptrs := make([]registry.Pointer, len(f.urls))
	for i := range f.urls {
		ptrs[i] = registry.Pointer{URL: f.urls[i], Digest: f.digests[i]}
	}
	out, err := registry.HintFile(path, ptrs)
	if err != nil {
		return err
	}
	switch f.output {
	case "-":
		_, err = a.stdout.Write(out)
		return err
	case "":
		f.output = path
	}
	return registry.WriteServerJSON(f.output, out)
}

// bundleAddresses is where registry verify and registry serve --verify
// fetch bundles: public addresses, and a loopback registry's own host and
// port besides (registry.Options.SourceHost); --allow-private-bundles
// allows every address.
func bundleAddresses(allowPrivate bool) source.AddressScope {
	if allowPrivate {
		return source.AnyAddress
	}
	return source.PublicAddresses
}
