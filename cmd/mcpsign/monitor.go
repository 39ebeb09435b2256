package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/monitor"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
)

func newMonitorCmd(a *app) *cobra.Command {
	var f monitorFlags
	cmd := &cobra.Command{
		Use:   "monitor --state FILE --certificate-identity ID --certificate-oidc-issuer URL --released DIR [flags]",
		Short: "Watch a transparency log for signatures by your identity that you did not release",
		Long: `Watch a Rekor transparency log (v2 tlog-tiles, or v1 through its API) for
entries signed by a publisher's identity whose artifact the publisher did not
release: a stolen CI identity or key that signs poisoned definitions shows up here.

Each run fetches the log's latest checkpoint, verifies its signature with the
log key of the trusted root, proves it consistent with the checkpoint of the
state file (a failed proof is an alert: the log forked or rewrote history), then
reads every entry added since, proving that the entries hash to the tree (v2:
the entry bundles and hash tiles; v1: each entry's inclusion proof). An entry whose certificate matches the
identity flags (the same flags and matching as verify) and chains to a CA of
the trusted root, or which the --key signed, or which an identity of a
--policy file's servers (--name, repeatable: only those; docs/MONITOR.md)
matches, and whose artifact digest is not
released, is an alert with its log index, identity and the source repository,
commit and ref its certificate vouches for. An artifact is released when its
digest is a --released-digest, or is signed by a bundle under --released (every
regular file is read; each one skipped is named) or listed by a
--released-registry for a --registry-server name (fetched as registry verify
fetches it, before each check) that verifies under a watched identity or key
with its log entry proven in this log: a bundle that does not verify releases
nothing, and one a registry lists for a watched server is an alert
(unverified-release) after which no state is written.

The state file (strict JSON, docs/MONITOR.md) is written atomically, only after
the whole range was checked: an interrupted run changes nothing and the next
run checks the same range. The first run needs --init, which creates the state
from the log's current checkpoint (or reads from --from-index).

--log is the log's URL: a Rekor v2 tlog-tiles URL (where checkpoint and tile/
are; not its write API: for the local stack, its storage directory served over
HTTP) or a Rekor v1 URL (where api/v1/log is); without it, the URL of the state
file, else the trusted root's only log.

--format json prints one JSON line per finding and a last line of kind "run"
(docs/JSON.md).

With --follow each line begins with its time (RFC 3339, UTC).

Exit codes: 0 nothing found; 1 an alert; 2 bad usage, input, or a log that
could not be read or verified (the state is left as it was).`,
		Example: `  # First run: record where the log is now
  mcpsign monitor --init --state rekor.state.json --log https://log2025-1.rekor.sigstore.dev \
    --certificate-identity-regexp '^https://github.com/acme/notes-mcp/' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com --released dist/

  # From cron or CI: check what was added since
  mcpsign monitor --once --state rekor.state.json \
    --certificate-identity-regexp '^https://github.com/acme/notes-mcp/' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com --released dist/ --format json

  # The public-good Rekor v1 log
  mcpsign monitor --init --state rekor-v1.state.json --log https://rekor.sigstore.dev \
    --certificate-identity-regexp '^https://github.com/acme/notes-mcp/' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com --released dist/

  # The identities the policy gives the servers notes and files (a certificate
  # identity, which no log holds, is a notice)
  mcpsign monitor --once --state rekor.state.json --policy /etc/mcpsign/policy.json \
    --name notes --name files --released dist/

  # What the registry lists for the acme namespace was released
  mcpsign monitor --once --state rekor.state.json --key release.pub \
    --released-registry https://registry.modelcontextprotocol.io --registry-server 'io.github.acme/*'

  # Keep going, every 10 minutes
  mcpsign monitor --follow --interval 10m --state rekor.state.json --key release.pub --released dist/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMonitor(cmd, a, &f) },
	}
	fl := cmd.Flags()
	f.id.AddFlags(fl)
	f.policy.AddFlags(fl)
	f.trust.AddFlags(fl)
	f.out.AddFlags(fl)
	fl.StringVar(&f.logURL, "log", "", "URL of the log to watch: Rekor v2 tlog-tiles or Rekor v1 (default: the state's, else the trusted root's only log)")
	fl.StringVar(&f.statePath, "state", "", "state file: the last checkpoint checked (docs/MONITOR.md); written only after a whole range was checked")
	options.StringArrayVar(fl, &f.released, "released", "directory of the bundles you released: every regular file is read, each skipped one named (repeatable)")
	options.StringArrayVar(fl, &f.digests, "released-digest", "digest of a released artifact as the log records it, sha256:HEX (repeatable)")
	options.StringArrayVar(fl, &f.registries, "released-registry", "registry whose attestations for the --registry-server names were released: a base URL or a file, as registry verify reads it (repeatable)")
	options.StringArrayVar(fl, &f.registryServers, "registry-server", "with --released-registry: a registry server NAMESPACE/NAME or NAMESPACE/* whose listed bundles were released (repeatable)")
	fl.BoolVar(&f.allowPrivateBundles, "allow-private-bundles", false, "with --released-registry: fetch bundles from loopback, private and link-local addresses too, as registry verify --allow-private-bundles")
	fl.BoolVar(&f.initState, "init", false, "create the state file from the log's current checkpoint (first run)")
	fl.Int64Var(&f.fromIndex, "from-index", -1, "with --init: read the log from this index instead of its current size")
	fl.BoolVar(&f.once, "once", false, "check once and exit (the default; for cron and CI)")
	fl.BoolVar(&f.follow, "follow", false, "keep checking every --interval until interrupted")
	fl.DurationVar(&f.interval, "interval", 5*time.Minute, "with --follow: time between checks")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each request to the log")
	return cmd
}

type monitorFlags struct {
	id                      options.IdentityOptions
	policy                  options.WatchPolicyOptions
	trust                   options.TrustOptions
	out                     options.OutputOptions
	logURL, statePath       string
	released, digests       []string
	registries              []string
	registryServers         []string
	allowPrivateBundles     bool
	initState, follow, once bool
	fromIndex               int64
	interval, timeout       time.Duration
}

func runMonitor(cmd *cobra.Command, a *app, f *monitorFlags) error {
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	s := monitor.Setup{ReleasedDirs: f.released, ReleasedDigests: f.digests, StatePath: f.statePath, Init: f.initState, FromIndex: f.fromIndex,
		LogURL: f.logURL, HTTPClient: a.httpClient, Timeout: f.timeout,
		OnSkipped: func(sk monitor.SkippedFile) {
			fmt.Fprintf(a.stderr, "mcpsign: notice: --released: %s skipped: %s\n", textsafe.Escape(sk.Path), textsafe.Escape(sk.Err.Error()))
		}}
	if s.Identity, err = f.id.VerifyIdentity(cmd.Flags()); err != nil {
		return err
	}
	if s.PublicKey, err = f.id.PublicKey(); err != nil {
		return err
	}
	if f.policy.File != "" {
		notice := func(sk policy.Skipped) { fmt.Fprintf(a.stderr, "mcpsign: notice: %s\n", textsafe.Escape(sk.String())) }
		if err := s.AddPolicy(f.policy.File, f.policy.Names, notice); err != nil {
			return err
		}
	}
	// What the flags name locally is checked before the trusted root
	// (TUF) and the log are read: a missing state is said as such.
	if _, err := monitor.OpenState(f.statePath, f.initState); err != nil {
		return err
	}
	for _, d := range f.released {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("--released %s: not a directory of released bundles: %w", textsafe.RawQuote(d), errOrNotDir(err))
		}
	}
	if s.TrustedMaterial, err = f.trust.LoadTrustedMaterial(cmd.Context()); err != nil {
		return err
	}
	opts, prev, err := s.Prepare(cmd.Context())
	if err != nil {
		return err
	}
	rep := &monitor.Reporter{W: a.stdout, JSON: asJSON, ReportVersion: reportVersion, StatePath: f.statePath}
	if f.follow {
		rep.Now = time.Now
	}
	opts.OnFinding = rep.Finding
	alerts, err := monitor.Watch(cmd.Context(), opts, prev, monitor.WatchOptions{StatePath: f.statePath, Follow: f.follow, Interval: f.interval,
		Reported: rep.Err, OnRun: rep.Summary, BeforeRun: monitor.RegistryRefresh(opts.Released, f.registries, f.registryServers, f.registryOptions(a)),
		OnError: func(err error) {
			fmt.Fprintf(a.stderr, "%smcpsign: %s\n", rep.Prefix(), textsafe.ShowError(withFlagHint(err)))
		}})
	switch {
	case errors.Is(err, monitor.ErrInconsistent), errors.Is(err, monitor.ErrUnverifiedListing):
		return failed(err)
	case err != nil:
		return err
	case alerts > 0:
		return silentExit(exitFailed)
	}
	return nil
}

// check refuses flag combinations that mean nothing.
func (f *monitorFlags) check() error {
	switch {
	case f.statePath == "":
		return errors.New("--state is required: the file that keeps the last checkpoint checked")
	case f.follow && f.once:
		return errors.New("--once and --follow exclude each other")
	case f.follow && f.interval < time.Second:
		return errors.New("--interval must be at least 1s")
	case f.fromIndex >= 0 && !f.initState:
		return errors.New("--from-index is for --init: later runs start where the state says")
	case len(f.policy.Names) > 0 && f.policy.File == "":
		return errors.New("--name is for --policy: it picks the policy's servers to watch")
	case len(f.registryServers) > 0 && len(f.registries) == 0:
		return errors.New("--registry-server names the servers of a --released-registry: give one")
	case f.trust.CARoots != "" || f.trust.CAIntermediates != "":
		return errors.New("--ca-roots and --ca-intermediates are for the certificate method, which monitor does not watch: watch an identity of the trusted root's Fulcio, or --key")
	}
	return nil
}

func errOrNotDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("it is a file")
}

// registryOptions are the options of the --released-registry reads.
func (f *monitorFlags) registryOptions(a *app) monitor.RegistryOptions {
	o := monitor.RegistryOptions{HTTPClient: a.httpClient}
	if f.allowPrivateBundles {
		o.BundleAddresses = source.AnyAddress
	}
	return o
}
