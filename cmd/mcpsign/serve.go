package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/proxy"
)

// serveFlags are serve's own flags; the proxy's groups come with them.
type serveFlags struct {
	listen         string
	tlsCert        string
	tlsKey         string
	maxSessions    int
	idleTimeout    time.Duration
	drainTimeout   time.Duration
	readyTTL       time.Duration
	clientWriteMax time.Duration
	passAuth       bool
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

/healthz, /readyz and /metrics (Prometheus, mcpsign_… metrics) are served
beside /mcp. SIGTERM drains: the requests in flight are answered, then the
sessions closed and the servers stopped, within --drain-timeout. SIGHUP reads
the policy and the lock again; a file that does not read is said in the log
and the configuration in force kept.

Listens on 127.0.0.1 unless --listen says otherwise; --tls-cert and --tls-key
serve HTTPS.

Exit codes: 0 drained after SIGTERM or SIGINT; 2 bad usage, a lock or policy
that does not read, an address that cannot be listened on.`,
		Example: `  # Enforce a lock in front of a stdio server, for clients on this machine
  mcpsign serve --listen 127.0.0.1:8080 --lock notes.mcpsign.lock -- npx -y @acme/notes-mcp@1.2.0

  # In front of a remote server, its token from the environment, under a policy
  mcpsign serve --listen 0.0.0.0:8443 --tls-cert tls.crt --tls-key tls.key \
    --policy /etc/mcpsign/policy.json --name notes \
    --header 'Authorization: Bearer ${NOTES_TOKEN}' -- https://notes.internal/mcp`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, a, &po, &f, &sf, args)
		},
	}
	fs := cmd.Flags()
	addProxyFlags(fs, &po, &f)
	fs.StringVar(&sf.listen, "listen", "127.0.0.1:8080", "address to serve on (host:port); the MCP endpoint is /mcp")
	fs.StringVar(&sf.tlsCert, "tls-cert", "", "PEM certificate chain to serve HTTPS with (with --tls-key)")
	fs.StringVar(&sf.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.IntVar(&sf.maxSessions, "max-sessions", front.DefaultMaxSessions, "most client sessions open at once (each one a relay, and a process for a stdio server); past it 503 with Retry-After")
	options.PositiveDurationVar(fs, &sf.idleTimeout, "idle-timeout", front.DefaultIdleTimeout, "close a session that sent nothing for this long (its server is stopped)")
	options.PositiveDurationVar(fs, &sf.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long the requests in flight get to be answered before they are interrupted")
	options.PositiveDurationVar(fs, &sf.readyTTL, "ready-ttl", front.DefaultReadyTTL, "how long a passed check makes /readyz pass without probing the server again")
	options.PositiveDurationVar(fs, &sf.clientWriteMax, "client-write-timeout", front.DefaultWriteTimeout, "how long one write to a client may take (a client that does not read loses its stream)")
	fs.BoolVar(&sf.passAuth, "pass-authorization", false, "send the Authorization a client starts its session with on to a remote server (https or loopback, its origin only; never logged), and refuse the session to other credentials")
	return cmd
}

func runServe(cmd *cobra.Command, a *app, po *options.ProxyOptions, f *verifyFlags, sf *serveFlags, args []string) error {
	if po.OAuth.Enabled {
		return errors.New("--oauth signs in in a browser, which a service cannot: give a remote server's credentials with --header")
	}
	if (sf.tlsCert == "") != (sf.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
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
	logger := slog.New(slog.NewJSONHandler(a.stderr, nil))
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
	mux := http.NewServeMux()
	mux.Handle("/mcp", fr)
	return runServeService(ctx, serveService{
		Listen:       sf.listen,
		TLSCert:      sf.tlsCert,
		TLSKey:       sf.tlsKey,
		Handler:      mux,
		Ready:        fr.Ready,
		Reload:       fr.Reload,
		Drain:        fr.Drain,
		Collectors:   fr.Collectors(),
		Logger:       logger,
		DrainTimeout: sf.drainTimeout,
		Stderr:       a.stderr,
	})
}
