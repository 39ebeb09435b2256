package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/service"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
)

type registryServeFlags struct {
	dumps                       []string
	svc                         options.ServiceOptions
	verify, policy, verifiedOut string
	every                       time.Duration
	workers                     int
	offline, allowPrivate       bool
}

func newRegistryServeCmd(a *app) *cobra.Command {
	var f registryServeFlags
	c := &cobra.Command{
		Use:   "serve --listen ADDR (--dump FILE | --verify SOURCE --policy FILE [--every 1h])",
		Short: "Serve the entries mcpsign verified on the generic registry API (/v0.1, /v0)",
		Long: `Serve a verified dump (the file registry verify --verified-out writes) on the
generic registry API's read routes under /v0.1 and /v0, each entry with its
_meta["dev.mcpsign/verified"]; or verify SOURCE under a policy now and every
--every, serving what verified. A set is served only whole: a dump that does not
read, or holds one entry without a valid verified block, is refused (exit 2 at
start; on SIGHUP or a scheduled run the set served is kept, and the log says
why). Entries that failed are never served. docs/REGISTRY.md, docs/ORGANIZATION.md.`,
		Example: `  # Serve last night's verified set
  mcpsign registry serve --listen 127.0.0.1:8080 --dump verified.json

  # The four shards of a sharded run, re-read every 10 minutes
  mcpsign registry serve --listen 127.0.0.1:8080 --every 10m \
    --dump shard-0.json --dump shard-1.json --dump shard-2.json --dump shard-3.json

  # Verify the public registry every hour and serve what passes
  mcpsign registry serve --listen :8443 --tls-cert tls.crt --tls-key tls.key \
    --verify https://registry.modelcontextprotocol.io --policy policy.json --every 1h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRegistryServe(cmd.Context(), a, &f, cmd.Flags().Changed("every"))
		},
	}
	fs := c.Flags()
	f.svc.AddFlags(fs) // --listen (required), TLS, --allow-plaintext, --drain-timeout
	options.StringArrayVar(fs, &f.dumps, "dump", "serve the verified dump `FILE` (repeatable: the shards of a sharded run, served as one set; re-read on SIGHUP, and every --every when given)")
	fs.StringVar(&f.verify, "verify", "", "verify `SOURCE` (as registry verify) and serve what verified")
	fs.StringVar(&f.policy, "policy", "", "the policy `FILE` for --verify (docs/POLICY.md)")
	options.PositiveDurationVar(fs, &f.every, "every", time.Hour, "with --verify, run again every `DURATION` (default 1h; and on SIGHUP); with --dump, re-read the files that often")
	fs.StringVar(&f.verifiedOut, "verified-out", "", "with --verify, also keep each whole run's dump in `FILE`")
	fs.IntVar(&f.workers, "workers", 0, "with --verify, entries verified in parallel (default: the number of CPUs)")
	fs.BoolVar(&f.offline, "offline", false, "with --verify, never fetch the trusted root through TUF")
	fs.BoolVar(&f.allowPrivate, "allow-private-bundles", false, "with --verify, fetch bundles from loopback, private and link-local addresses too")
	c.MarkFlagRequired("listen")
	return c
}

func runRegistryServe(ctx context.Context, a *app, f *registryServeFlags, everySet bool) error {
	if (len(f.dumps) == 0) == (f.verify == "") {
		return errors.New("give --dump FILE, or --verify SOURCE with --policy FILE")
	}
	if f.verify != "" && f.policy == "" {
		return errors.New("--verify needs --policy FILE")
	}
	if len(f.dumps) > 0 && f.policy != "" {
		return errors.New("--policy goes with --verify, not --dump (a dump is served as it was verified)")
	}
	defer service.HoldHangup()()
	log := service.NewLogger(a.stderr, nil)
	var load func(context.Context) (*registry.ServedSet, error)
	if len(f.dumps) > 0 {
		load = func(ctx context.Context) (*registry.ServedSet, error) {
			set, err := registry.LoadServedFiles(ctx, f.dumps, registry.Limits{})
			if err != nil {
				return nil, fmt.Errorf("--dump %w", err)
			}
			return set, nil
		}
	} else {
		pf, err := policy.Read(f.policy)
		if err != nil {
			return err
		}
		v, err := registry.New(registry.Options{Policy: pf, HTTPClient: a.httpClient,
			BundleAddresses: bundleAddresses(f.allowPrivate), SourceHost: registry.SourceHost(f.verify),
			DeciderOptions: policy.DeciderOptions{Offline: f.offline}})
		if err != nil {
			return err
		}
		defer v.Close()
		load = func(ctx context.Context) (*registry.ServedSet, error) {
			o := registry.SourceOptions{RunOptions: registry.RunOptions{Workers: f.workers},
				Client: registry.Client{HTTPClient: a.httpClient}, VerifiedOut: f.verifiedOut}
			set, sum, err := v.VerifyServed(ctx, f.verify, o, registry.Limits{})
			if err != nil {
				return nil, fmt.Errorf("--verify %s: %w", f.verify, err)
			}
			log.Info("verification run", "entries", sum.Entries, "verified", sum.Verified, "failed", sum.Entries-sum.Verified)
			return set, nil
		}
	}
	srv := &registry.Server{}
	set, err := srv.Reload(ctx, load)
	if err != nil {
		return withCode(exitError, err)
	}
	log.Info("serving", "entries", set.Len(), "dumpBytes", set.Bytes)
	reload := func(why string) func(context.Context) error {
		return func(ctx context.Context) error {
			set, err := srv.Reload(ctx, load)
			if err != nil {
				log.Error("registry reload refused: the set served is kept", "trigger", why, "entries", srv.Set().Len(), "error", err.Error())
				return err
			}
			log.Info("registry set reloaded", "trigger", why, "entries", set.Len(), "dumpBytes", set.Bytes)
			return nil
		}
	}
	if f.verify != "" || everySet {
		go func() {
			t := time.NewTicker(f.every)
			defer t.Stop()
			scheduled := reload("schedule")
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					scheduled(ctx)
				}
			}
		}()
	}
	ln, err := f.svc.OpenListener()
	if err != nil {
		return err
	}
	// CORS as GitHub Copilot's clients ask of a registry (any origin, GET,
	// the ETag exposed): service.CORSOptions' zero value.
	served := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpsign_registry_served_entries",
		Help: "Server versions registry serve serves now."}, func() float64 { return float64(srv.Set().Len()) })
	err = service.Run(ctx, f.svc.Service(ln, service.Options{Handler: service.CORS(service.CORSOptions{})(srv.Routes()), Logger: log,
		Collectors: []prometheus.Collector{served}, Reload: reload("SIGHUP"),
		Listening: func(addr net.Addr, scheme string) {
			fmt.Fprintf(a.stderr, "registry serve: %d entries on %s://%s/v0.1/servers\n", srv.Set().Len(), scheme, addr)
		}}))
	return f.svc.Err(err)
}
