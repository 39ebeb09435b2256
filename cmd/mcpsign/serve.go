package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/service"
	"github.com/mcpsign/mcpsign/proxy"
)

// serveFlags are serve's own flags; the proxy's groups and the service
// group (options.ServiceOptions, shared with registry serve) come with
// them.
type serveFlags struct {
	svc            options.ServiceOptions
	maxSessions    int
	idleTimeout    time.Duration
	readyTTL       time.Duration
	clientWriteMax time.Duration
	passAuth       bool
	allowOrigins   []string
	tokensFile     string
	tokensEnv      string
}

func newServeCmd(a *app) *cobra.Command {
	var (
		po options.ProxyOptions
		f  verifyFlags
		sf serveFlags
	)
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR (--lock FILE [--bundle FILE verify-flags | --tofu] | --policy FILE --name NAME) -- CMD [ARGS...] | URL",
		Short: "Serve an MCP server over Streamable HTTP to many clients, enforcing its lock in every session",
		Long: `Serve the MCP server after -- (a stdio command, or a Streamable HTTP URL, as
for 'mcpsign proxy') at http://ADDR/mcp to any number of MCP clients, through
the proxy's relay: the same reader, lock, policy, signed roll-forward and audit
log, and nothing reaches a client before it was checked (docs/SERVE.md).

  sessions   a client that initializes gets a session (Mcp-Session-Id) with a
             relay of its own: a stdio server runs once per session, a remote
             server gets one upstream session per client session. DELETE ends
             it; so does --idle-timeout; past --max-sessions a new session is
             answered 503 with Retry-After.
  stateless  a request of protocol 2026-07-28 without a session is relayed
             through a relay of its own that lists and checks the server
             before the request reaches it.
  drift      a session whose server changed is blocked as the proxy blocks it;
             the front is then not ready (/readyz) until a signed roll-forward
             or a reload; every later session is checked before anything is
             relayed. A signed update rolls the lock forward once, for all
             sessions.

The flags of 'mcpsign proxy' apply (the lock, --bundle and the verify flags,
--tofu, --policy and --name, --audit-log, --header for a remote server, the
limits). --oauth is not: a service cannot sign in in a browser; give a
remote server's credentials with --header.

Endpoints: /mcp (the MCP endpoint: POST, GET for a session's stream, DELETE);
/healthz (200 while serving), /readyz (200 once the lock in force is proven
and the upstream answers undrifted; 503 with the reason, and while draining),
/metrics (Prometheus, mcpsign_… metrics). docs/DEPLOY.md.

Who may call /mcp, checked in this order (403 or 401, nothing relayed):
  Host       a request that reached a loopback address must name a loopback
             host (DNS rebinding)
  Origin     a browser's request needs an Origin given with --allow-origin
             (the MCP spec's check); clients that are not browsers send none
  token      with --tokens-file or --tokens-env, Authorization: Bearer with
             one of the tokens (never passed on, never logged)

Listens on 127.0.0.1:8080 unless --listen says otherwise; an address that is
not loopback needs --tls-cert and --tls-key, or --allow-plaintext when TLS
ends in front (a mesh, an ingress). SIGTERM or SIGINT drains: the requests in
flight are answered, then the sessions closed and the servers stopped, within
--drain-timeout. SIGHUP reads the policy, the lock, the token file and the TLS
pair again; a file that does not read is said in the log and what is in force
kept.

Memory: serve runs the Go collector at GOGC=400 unless GOGC is set (less CPU
per call, a heap up to five times the live one between collections); in a
container with a memory limit set GOMEMLIMIT below it (docs/DEPLOY.md).

Exit codes: 0 drained after SIGTERM or SIGINT; 2 bad usage, a lock, policy,
token file or TLS pair that does not read, an address that cannot be listened
on, a drain cut at --drain-timeout.`,
		Example: `  # A stdio server, one process per client session, for clients on this machine
  mcpsign serve --lock notes.mcpsign.lock -- npx -y @acme/notes-mcp@1.2.0

  # A remote Streamable HTTP server, under a policy, over HTTPS, with client tokens
  mcpsign serve --listen 0.0.0.0:8443 --tls-cert tls.crt --tls-key tls.key \
    --policy /etc/mcpsign/policy.json --name notes --tokens-file /etc/mcpsign/tokens \
    --header 'Authorization: Bearer ${NOTES_TOKEN}' -- https://notes.internal/mcp

  # A sidecar in Kubernetes: the server on the Pod's loopback, TLS at the mesh,
  # a web host's origin allowed
  mcpsign serve --listen 0.0.0.0:8080 --allow-plaintext --drain-timeout 20s \
    --allow-origin https://agent.example.com --lock /etc/mcpsign/notes.lock.json \
    -- http://127.0.0.1:3000/mcp`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, a, &po, &f, &sf, args)
		},
	}
	fs := cmd.Flags()
	addProxyFlags(fs, &po, &f)
	sf.svc = options.ServiceOptions{Listen: service.DefaultListen, DrainTimeout: 30 * time.Second}
	sf.svc.AddFlags(fs)
	options.StringArrayVar(fs, &sf.allowOrigins, "allow-origin", "let browsers of the `ORIGIN` (scheme://host[:port]) call /mcp (repeatable); a request with any other Origin is refused 403, one without Origin passes")
	fs.StringVar(&sf.tokensFile, "tokens-file", "", "require Authorization: Bearer with one of the tokens in `FILE` (one a line, # comments; re-read on SIGHUP)")
	fs.StringVar(&sf.tokensEnv, "tokens-env", "", "require Authorization: Bearer with one of the tokens in the environment variable `NAME` (one a line)")
	fs.IntVar(&sf.maxSessions, "max-sessions", front.DefaultMaxSessions, "most client sessions open at once (each one a relay, and a process for a stdio server); past it 503 with Retry-After")
	options.PositiveDurationVar(fs, &sf.idleTimeout, "idle-timeout", front.DefaultIdleTimeout, "close a session that sent nothing for this long (its server is stopped)")
	options.PositiveDurationVar(fs, &sf.readyTTL, "ready-ttl", front.DefaultReadyTTL, "how long a passed check makes /readyz pass without probing the server again")
	options.PositiveDurationVar(fs, &sf.clientWriteMax, "client-write-timeout", front.DefaultWriteTimeout, "how long one write to a client may take (a client that does not read loses its stream)")
	fs.BoolVar(&sf.passAuth, "pass-authorization", false, "send the Authorization a client starts its session with on to a remote server (https or loopback, its origin only; never logged), and refuse the session to other credentials")
	return cmd
}

// serveGCPercent is the garbage collector's target (GOGC) of `mcpsign
// serve` when the operator set none: every POST allocates about 130 KB in
// the MCP SDK's server transport (its decoders' buffers), garbage at once,
// against a live heap of a few kilobytes per session; at the default
// (100) a collection ran every few dozen calls and took about a third of
// the front's CPU. At 400 the heap may grow to five times the live heap
// between collections; GOMEMLIMIT bounds it (docs/DEPLOY.md, "CPU and
// memory").
const serveGCPercent = 400

func runServe(cmd *cobra.Command, a *app, po *options.ProxyOptions, f *verifyFlags, sf *serveFlags, args []string) error {
	if po.OAuth.Enabled {
		return errors.New("--oauth signs in in a browser, which a service cannot: give a remote server's credentials with --header")
	}
	if (sf.svc.TLSCert == "") != (sf.svc.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	}
	if sf.tokensFile != "" && sf.tokensEnv != "" {
		return errors.New("--tokens-file and --tokens-env: give one source of client tokens")
	}
	if sf.passAuth && (sf.tokensFile != "" || sf.tokensEnv != "") {
		return errors.New("--pass-authorization and --tokens-file/--tokens-env both use the client's Authorization header: give one")
	}
	if a.getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	// A SIGHUP while the first check runs must not end the process.
	defer service.HoldHangup()()
	originCheck, err := service.CheckOrigin(sf.allowOrigins)
	if err != nil {
		return fmt.Errorf("--allow-origin: %w", err)
	}
	var tokens *service.Tokens
	if sf.tokensFile != "" || sf.tokensEnv != "" {
		toks, err := readServeTokens(sf)
		if err != nil {
			return err
		}
		if tokens, err = service.NewTokens(toks); err != nil {
			return err
		}
		if sf.tokensEnv != "" {
			// Every stdio upstream inherits this process's environment: the
			// clients' tokens must not reach a server. A process's
			// environment does not change, so a reload has nothing to read
			// again from it.
			if err := os.Unsetenv(sf.tokensEnv); err != nil {
				return fmt.Errorf("--tokens-env %s: %w", sf.tokensEnv, err)
			}
		}
	}
	// The configuration of the command line: checked now (a lock or policy
	// that does not read fails before anything listens: exit 2), and
	// again, the same way, on every reload.
	var cfg *proxycmd.Config
	var vf proxy.VerifyFunc
	capture := func(_ *cobra.Command, _ *app, c *proxycmd.Config, v proxy.VerifyFunc) error {
		if err := checkFirstUse(c, v); err != nil {
			return err
		}
		cfg, vf = c, v
		return nil
	}
	if err := prepareProxy(cmd, a, po, f, args, capture); err != nil {
		return err
	}
	logger := service.NewLogger(a.stderr, nil)
	var mu sync.Mutex // a reload at a time
	first := true
	load := func(ctx context.Context) (proxy.Options, error) {
		mu.Lock()
		defer mu.Unlock()
		if !first {
			if err := prepareProxy(cmd, a, po, f, args, capture); err != nil {
				return proxy.Options{}, err
			}
		}
		first = false
		return proxycmd.SessionOptions(ctx, cfg, vf, a.stderr)
	}
	ctx := cmd.Context()
	fr, err := front.New(ctx, front.Options{
		Load:              load,
		Logger:            logger,
		MaxSessions:       sf.maxSessions,
		IdleTimeout:       sf.idleTimeout,
		ReadyTTL:          sf.readyTTL,
		WriteTimeout:      sf.clientWriteMax,
		PassAuthorization: sf.passAuth,
	})
	if err != nil {
		return fmt.Errorf("--lock %s: %w", cfg.Lock, err)
	}
	// docs/DEPLOY.md: the Host check, then the Origin, then the token,
	// then the front.
	var h http.Handler = fr
	if tokens != nil {
		h = service.BearerTokens(tokens)(h)
	}
	h = service.LoopbackHost()(originCheck(h))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := sf.svc.OpenListener()
	if err != nil {
		fr.Drain(context.WithoutCancel(ctx))
		return err
	}
	reload := func(ctx context.Context) error {
		// Each part is swapped in only whole; a part that does not read
		// keeps what is in force (the front logs its own refusal).
		var errs []error
		var toks []string
		var terr error
		if sf.tokensFile != "" {
			if toks, terr = readServeTokens(sf); terr == nil {
				terr = tokens.Replace(toks)
			}
			if terr != nil {
				logger.Error("reload failed: the client tokens in force are kept", "error", terr)
				errs = append(errs, terr)
			}
		}
		errs = append(errs, fr.Reload(ctx))
		return errors.Join(errs...)
	}
	err = service.Run(ctx, sf.svc.Service(ln, service.Options{
		Handler:    mux,
		Ready:      fr.Ready,
		Reload:     reload,
		Drain:      fr.Drain,
		Collectors: fr.Collectors(),
		Logger:     logger,
		Listening: func(addr net.Addr, scheme string) {
			fmt.Fprintf(a.stderr, "mcpsign serve: listening on %s://%s/mcp\n", scheme, addr)
		},
	}))
	return sf.svc.Err(err)
}

// readServeTokens reads the client tokens of --tokens-file (bounded) or
// --tokens-env.
func readServeTokens(sf *serveFlags) ([]string, error) {
	if sf.tokensEnv != "" {
		toks, err := service.TokensFromEnv(sf.tokensEnv)
		if err != nil {
			return nil, fmt.Errorf("--tokens-env %s: %w", sf.tokensEnv, err)
		}
		return toks, nil
	}
	data, err := boundedfile.Read(sf.tokensFile, service.MaxTokensFileBytes, nil)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file %s: %w", sf.tokensFile, err)
	}
	toks, err := service.ParseTokens(sf.tokensFile, data)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %w", err)
	}
	return toks, nil
}
