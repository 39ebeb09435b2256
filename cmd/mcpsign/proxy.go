package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/internal/proxyhint"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
)

func newProxyCmd(a *app) *cobra.Command {
	var (
		po options.ProxyOptions
		f  verifyFlags
	)
	cmd := &cobra.Command{
		Use:   "proxy --lock FILE [--bundle FILE verify-flags | --tofu] -- CMD [ARGS...] | URL",
		Short: "Run an MCP server behind a proxy that blocks any change to its pinned definitions",
		Long: `Run a stdio MCP server (the command after --) behind a proxy that relays its
JSON-RPC byte for byte and lets nothing through that the lock does not approve.
A host starts 'mcpsign proxy ... -- CMD' instead of CMD (docs/HOSTS.md shows the
configuration of Claude Desktop and VS Code).

Remote servers: with one https:// URL after -- (http:// only to a loopback
address), the proxy is a bridge: the host speaks stdio to it, it speaks
Streamable HTTP to the server, with the same checks (docs/PROXY.md, "Remote
servers"). --header 'Name: value' (repeatable) is sent with every request,
${VAR} in the value read from the environment; values are never printed. A
server that cannot be reached, fails TLS, answers 401 or 403, or redirects
ends the session with one line saying what failed (exit 2).

OAuth: --oauth (and the --oauth-* flags and --no-browser of the listing
commands, docs/REMOTE.md) signs in to a server that asks for it before the
session starts, on stderr (the browser opens; with --no-browser the URL is
printed), then takes the cached token, refreshed when it expires or the
server refuses it. When no refresh helps during the session, the proxy signs
in again in the browser; with --no-browser the session ends with one line
saying to restart it. Nothing of OAuth is written to stdout.

  start-up   the lock is read first: an unreadable or modified lock is refused
             (exit 2) before the server starts. After the client's initialize
             (or server/discover, or its first request under protocol
             2026-07-28) the proxy holds the client's traffic and the server's
             answer, lists every page of tools, prompts and resource templates
             itself, and compares them, and the instructions, with the lock.
  session    every list result the client receives is checked too (a server
             can answer the proxy honestly and the client otherwise), and every
             notifications/*/list_changed makes the proxy list and check again
             before the notification is forwarded.
  drift      on any change the proxy answers every held, pending and later
             request with JSON-RPC error -32001 "blocked by mcpsign:
             definitions changed", stops the server (its whole process group),
             prints the diff to stderr (control, bidirectional and invisible
             characters escaped), and exits 42 when the client disconnects.

First use: with no lock file, --bundle and the verify flags verify the
publisher's signature over the server's definitions and write the lock (signed
first use); --tofu writes it from the first definitions seen, unsigned. With
neither, a missing lock is an error.

Signed updates: when the server changed and --bundle (re-read at that moment)
verifies the new definitions under the same policy, signed by the signer the
lock records (same method, identity and issuer), the lock is rolled forward
atomically and the session goes on. Anything else blocks. Several proxies may
share one lock: writes take its file lock, and a proxy re-reads the lock before
refusing a change another one approved.

The verification method follows from the flags: --key selects key, --ca-roots
selects certificate, otherwise sigstore (keyless; --certificate-identity and
--certificate-oidc-issuer required).

Process: once the command line checks out, mcpsign hands the session over to
mcpsign-proxy, the small executable installed beside it (go install
github.com/mcpsign/mcpsign/cmd/...): the same process, streams and ID, without
the signing and TUF code; when definitions need approving it runs 'mcpsign
proxy-verify' with the same flags. Without mcpsign-proxy, mcpsign runs the
proxy itself (docs/PROXY.md).

Nothing but the relayed protocol is written to stdout. The server's stderr is
passed to stderr, escaped.

Exit codes: 0 the session ended (the client or the server closed it); 2 bad
usage, a bad lock, a server that could not be started or checked; 42 the
definitions changed, or the server broke the protocol, and the session was
blocked.`,
		Example: `  # Pin on first use (unsigned), then enforce: what a host runs
  mcpsign proxy --lock notes.mcpsign.lock --tofu -- npx -y @acme/notes-mcp@1.2.0

  # Signed first use and signed updates, keyless
  mcpsign proxy --lock notes.mcpsign.lock --bundle notes.sigstore.json \
    --certificate-identity https://github.com/acme/notes-mcp/.github/workflows/release.yml@refs/tags/v1.2.0 \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com \
    --trusted-root trusted_root.json -- npx -y @acme/notes-mcp@1.2.0

  # A publisher key, offline
  mcpsign proxy --lock notes.mcpsign.lock --bundle notes.sigstore.json --key acme.pub.pem -- ./notes-server

  # Hide the static resources: resources/list is answered with an empty list,
  # resources/read refused but through a pinned resource template
  mcpsign proxy --lock notes.mcpsign.lock --resources hide -- ./notes-server

  # A remote server, its token from the environment
  mcpsign proxy --lock notes.mcpsign.lock --tofu --header 'Authorization: Bearer ${NOTES_TOKEN}' \
    -- https://mcp.acme.example/mcp

  # A remote server behind OAuth: sign in in the browser on the first start,
  # the cached token afterwards
  mcpsign proxy --lock notes.mcpsign.lock --tofu --oauth -- https://mcp.acme.example/mcp

  # See it work end to end
  mcpsign demo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProxy(cmd, a, &po, &f, args)
		},
	}
	addProxyFlags(cmd.Flags(), &po, &f)
	return cmd
}

// addProxyFlags adds the flags of 'mcpsign proxy', which 'mcpsign
// proxy-verify' takes too.
func addProxyFlags(fs *pflag.FlagSet, po *options.ProxyOptions, f *verifyFlags) {
	po.AddFlags(fs)
	f.vo.AddBundleFlags(fs)
	f.trust.AddFlags(fs)
	f.id.AddFlags(fs)
	f.pol.AddFlags(fs)
}

func runProxy(cmd *cobra.Command, a *app, po *options.ProxyOptions, f *verifyFlags, args []string) error {
	return prepareProxy(cmd, a, po, f, args, startProxy)
}

// proxyStarter runs what a checked proxy command line configured: the
// proxy (startProxy) or the front (startServe); vf verifies definitions
// the lock does not hold (nil: nothing but the lock, or TOFU).
type proxyStarter func(cmd *cobra.Command, a *app, cfg *proxycmd.Config, vf proxy.VerifyFunc) error

// prepareProxy checks the flags of a proxy command line (the proxy's, and
// serve's, which takes the same groups), resolves --policy, and hands the
// configuration to start.
func prepareProxy(cmd *cobra.Command, a *app, po *options.ProxyOptions, f *verifyFlags, args []string, start proxyStarter) error {
	cfg := po.ProxyConfig()
	if err := proxyServer(cmd, po, cfg, args); err != nil {
		return err
	}
	f.serveFrom(source.Spec{URL: cfg.URL, Command: cfg.Command})
	if _, err := proxy.ResourceModeFor(cfg.Resources, nil); err != nil {
		return fmt.Errorf("--resources: %w", err)
	}
	if f.pol.File != "" {
		return runProxyWithPolicy(cmd, a, cfg, f, start)
	}
	if err := checkNames(&f.pol); err != nil {
		return err
	}
	if cfg.Lock == "" {
		return errors.New("--lock FILE is required: the lock to enforce (written on first use with --bundle or --tofu)")
	}
	if po.RollForward != "signed" && po.RollForward != "manual" {
		return fmt.Errorf("--roll-forward %s: want signed or manual", textsafe.RawQuote(po.RollForward))
	}
	bundle, err := newBundleInput(a, f)
	if err != nil {
		return err
	}
	if bundle == nil {
		if cmd.Flags().Changed("key") || cmd.Flags().Changed("certificate-identity") || cmd.Flags().Changed("certificate-identity-regexp") {
			return errors.New("the identity flags need --bundle: the signed definitions to verify")
		}
		return start(cmd, a, cfg, nil)
	}
	// Checked now, so that bad flags or trust material fail before the
	// server starts, whichever process verifies later.
	v, err := verifyPolicy(cmd, f, methodOf(f), false)
	if err != nil {
		return err
	}
	return start(cmd, a, cfg, bundle.verifier(v))
}

// startProxy signs in, then hands cfg over to mcpsign-proxy when it is
// installed (vf non-nil: it verifies through 'mcpsign proxy-verify' with
// the same flags), else runs the proxy in this process (proxycmd.Start).
func startProxy(cmd *cobra.Command, a *app, cfg *proxycmd.Config, vf proxy.VerifyFunc) error {
	if err := checkFirstUse(cfg, vf); err != nil {
		return err
	}
	if cfg.OAuth != nil {
		cfg.OAuth.Open = a.openURL
	}
	var verifyArgs []string
	if vf != nil {
		verifyArgs = proxyVerifyArgs(cmd.Flags(), cfg)
	}
	code, err := proxycmd.Start(cmd.Context(), cfg, vf, proxycmd.StartOptions{HandOver: a.handOverProxy, VerifyArgs: verifyArgs,
		Hint: proxyhint.Hint, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr})
	if err != nil {
		return options.OAuthSecretFlag(err)
	}
	if code != proxycmd.ExitOK {
		return silentExit(code)
	}
	return nil
}

// checkFirstUse checks, when the lock of cfg does not exist yet, that a
// first use may write it (vf, or --tofu) and can.
func checkFirstUse(cfg *proxycmd.Config, vf proxy.VerifyFunc) error {
	if _, err := os.Stat(cfg.Lock); errors.Is(err, fs.ErrNotExist) {
		if vf == nil && !cfg.TOFU {
			// Said here, with the flags, before the hand-over: the proxy's
			// own refusal (proxy.ErrNoLock) names none.
			return fmt.Errorf("%w at %s: give --bundle with the verify flags for a signed first use, or --tofu to trust the first definitions seen", proxy.ErrNoLock, cfg.Lock)
		}
		// A first use writes the lock (and its audit record): checked
		// before the server starts and is listed, as pin checks it.
		if err := auditevent.CheckLockOutputs(cfg.Lock, false, cfg.AuditLog); err != nil {
			return fmt.Errorf("--lock %s: the lock of the first use cannot be written: %w", cfg.Lock, err)
		}
	}
	return nil
}

// proxyVerifyArgs are the flags mcpsign-proxy gives 'mcpsign proxy-verify'
// for the proxy of cfg: those set on the command line (changedFlagArgs),
// and the addresses the bundle URL its server advertises may be fetched
// from (source.ServedAddresses; --allow-private-bundles, when given, is
// among the flags and widens it to every address there).
func proxyVerifyArgs(fs *pflag.FlagSet, cfg *proxycmd.Config) []string {
	served := source.ServedAddresses(source.Spec{URL: cfg.URL, Command: cfg.Command}, false)
	return append(changedFlagArgs(fs), "--"+servedAddressesFlag+"="+served.String())
}

// handOverProxy replaces the process with mcpsign-proxy, when it is
// installed beside this executable, to run cfg (proxycmd.HandOver);
// verifyArgs (nil without --bundle) are the flags it gives 'mcpsign
// proxy-verify'.
func handOverProxy(cfg *proxycmd.Config, verifyArgs []string) (bool, error) {
	if verifyArgs != nil {
		verifyArgs = append([]string{proxyVerifyCommand}, verifyArgs...)
	}
	return proxycmd.HandOver(cfg, verifyArgs, "--"+serverAdvertisedFlag)
}

// proxyServer sets the server of cfg from what follows -- on a proxy's
// command line (proxycmd.Config.SetServer), and checks that --header and
// --oauth go with a remote server. The headers are checked here, ${VAR}
// included, so that a mistake fails before the hand-over; the proxy reads
// them again where it runs.
func proxyServer(cmd *cobra.Command, po *options.ProxyOptions, cfg *proxycmd.Config, args []string) error {
	if dash := cmd.ArgsLenAtDash(); dash != 0 || len(args) == 0 {
		return errors.New("give the server command after --: mcpsign proxy --lock FILE -- CMD [ARGS...] (or -- https://host/mcp for a remote server)")
	}
	if err := cfg.SetServer(args); err != nil {
		return err
	}
	if len(cfg.Headers) > 0 {
		if cfg.URL == "" {
			return errors.New("--header is for a remote server: give its URL after -- (a stdio server gets no HTTP headers)")
		}
		if _, err := mcpwire.ParseHeaders(cfg.Headers, os.LookupEnv); err != nil {
			return fmt.Errorf("--header: %w", err)
		}
	}
	if po.OAuth.Enabled && cfg.URL == "" {
		return errors.New("--oauth is for a remote server: give its URL after -- (a stdio server signs in by itself)")
	}
	return po.OAuth.CheckOAuthHeaders(cfg.Headers)
}

// changedFlagArgs returns the flags set on the command line as arguments
// that give the same values again (--name=value, one per element of a list).
// --header is left out: 'mcpsign proxy-verify' speaks to no server, and a
// header's value must not show in its command line.
func changedFlagArgs(fs *pflag.FlagSet) []string {
	args := []string{}
	fs.Visit(func(fl *pflag.Flag) {
		if fl.Name == "header" {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, e := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+e)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return args
}
