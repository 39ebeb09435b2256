package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/monitor"
	"github.com/mcpsign/mcpsign/verify"
)

func newMonitorCmd(a *app) *cobra.Command {
	var (
		id        options.IdentityOptions
		trust     options.TrustOptions
		out       options.OutputOptions
		logURL    string
		statePath string
		released  []string
		digests   []string
		initState bool
		fromIndex int64
		follow    bool
		once      bool
		interval  time.Duration
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "monitor --state FILE --certificate-identity ID --certificate-oidc-issuer URL --released DIR [flags]",
		Short: "Watch a transparency log for signatures by your identity that you did not release",
		Long: `Watch a Rekor v2 transparency log (tlog-tiles) for entries signed by a publisher's
identity whose artifact the publisher did not release: a stolen CI identity or
key that signs poisoned definitions shows up here.

Each run fetches the log's latest checkpoint, verifies its signature with the
log key of the trusted root, proves it consistent with the checkpoint of the
state file (a failed proof is an alert: the log forked or rewrote history), then
reads every entry added since, one entry bundle at a time, proving each bundle
part of the tree before reading it. An entry whose certificate matches the
identity flags (the same flags and matching as verify) and chains to a CA of
the trusted root, or which the --key signed, and whose artifact digest is not
released, is an alert with its log index, identity and the source repository,
commit and ref its certificate vouches for. An artifact is released when its
digest is the signed payload digest of a bundle under --released, or a
--released-digest.

The state file (strict JSON, docs/MONITOR.md) is written atomically, only after
the whole range was checked: an interrupted run changes nothing and the next
run checks the same range. The first run needs --init, which creates the state
from the log's current checkpoint (or reads from --from-index).

--log is the log's tlog-tiles URL (where checkpoint and tile/ are); without it,
the URL of the state file, else the trusted root's only log.

--format json prints one JSON line per finding and a last line of kind "run"
(docs/JSON.md). Rekor v1 logs are not read yet.

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

  # Keep going, every 10 minutes
  mcpsign monitor --follow --interval 10m --state rekor.state.json --key release.pub --released dist/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.JSON()
			if err != nil {
				return err
			}
			if statePath == "" {
				return errors.New("--state is required: the file that keeps the last checkpoint checked")
			}
			if follow && once {
				return errors.New("--once and --follow exclude each other")
			}
			if follow && interval < time.Second {
				return errors.New("--interval must be at least 1s")
			}
			if fromIndex >= 0 && !initState {
				return errors.New("--from-index is for --init: later runs start where the state says")
			}
			if trust.CARoots != "" || trust.CAIntermediates != "" {
				return errors.New("--ca-roots and --ca-intermediates are for the certificate method, which monitor does not watch: watch an identity of the trusted root's Fulcio, or --key")
			}
			ident, err := id.VerifyIdentity(cmd.Flags())
			if err != nil {
				return err
			}
			opts := monitor.Options{Released: monitor.NewReleased()}
			pub, err := id.PublicKey()
			if err != nil {
				return err
			}
			if pub != nil {
				kid, err := verify.KeyID(pub)
				if err != nil {
					return fmt.Errorf("--key: %w", err)
				}
				opts.KeyIDs = []string{kid}
			}
			if ident != (verify.Identity{}) {
				if opts.Identities, err = verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{ident}); err != nil {
					return err
				}
			}
			if opts.Identities == nil && opts.KeyIDs == nil {
				return errors.New("nothing to watch: give the identity flags (--certificate-identity or --certificate-identity-regexp, and --certificate-oidc-issuer) or --key")
			}
			for _, d := range released {
				if _, err := opts.Released.AddDir(d); err != nil {
					return fmt.Errorf("--released %s: %w", d, err)
				}
			}
			for _, d := range digests {
				if err := opts.Released.AddDigest(d); err != nil {
					return fmt.Errorf("--released-digest: %w", err)
				}
			}
			ctx := cmd.Context()
			if opts.TrustedMaterial, err = trust.LoadTrustedMaterial(ctx); err != nil {
				return err
			}

			var prev *monitor.State
			switch st, err := monitor.ReadState(statePath); {
			case err == nil && initState:
				return fmt.Errorf("--init: %s exists: it already holds a state", statePath)
			case err == nil:
				prev = st
			case errors.Is(err, fs.ErrNotExist) && initState:
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("no state file %s: run once with --init to start watching", statePath)
			default:
				return err
			}
			if initState && fromIndex >= 0 {
				n := uint64(fromIndex)
				opts.StartIndex = &n
			}
			opts.LogURL = logURL
			if opts.LogURL == "" && prev != nil {
				opts.LogURL = prev.Log.URL
			}
			if opts.LogURL == "" {
				urls := monitor.TrustedLogURLs(opts.TrustedMaterial)
				if len(urls) != 1 {
					return fmt.Errorf("the trusted root has %d transparency logs: name the one to watch with --log", len(urls))
				}
				opts.LogURL = urls[0]
			}
			if timeout > 0 {
				opts.HTTPClient = clientWithTimeout(a, timeout)
			} else if a.httpClient != nil {
				opts.HTTPClient = a.httpClient
			}
			w := &monitorWriter{w: a.stdout, json: asJSON}
			opts.OnFinding = w.finding

			alerts := 0
			for {
				res, err := monitor.Run(ctx, opts, prev)
				if res != nil {
					alerts += res.Alerts
				}
				if err == nil && w.err != nil {
					// A finding that did not reach its reader is not
					// reported: the state stays, so the next run reports it.
					return fmt.Errorf("writing the findings: %w (state not written)", w.err)
				}
				if err == nil {
					if err = monitor.WriteState(statePath, res.State); err == nil {
						prev = res.State
						w.summary(res, statePath)
					}
				}
				switch {
				case err == nil:
				case errors.Is(err, monitor.ErrInconsistent):
					return failed(err)
				case !follow || ctx.Err() != nil:
					if ctx.Err() != nil && follow {
						return exitFor(alerts)
					}
					return err
				default:
					fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.EscapeKeepLayout(err.Error()))
				}
				if !follow {
					return exitFor(alerts)
				}
				opts.StartIndex = nil
				select {
				case <-ctx.Done():
					return exitFor(alerts)
				case <-time.After(interval):
				}
			}
		},
	}
	fl := cmd.Flags()
	id.AddFlags(fl)
	trust.AddFlags(fl)
	out.AddFlags(fl)
	fl.StringVar(&logURL, "log", "", "tlog-tiles URL of the Rekor v2 log to watch (default: the state's, else the trusted root's only log)")
	fl.StringVar(&statePath, "state", "", "state file: the last checkpoint checked (docs/MONITOR.md); written only after a whole range was checked")
	fl.StringArrayVar(&released, "released", nil, "directory of the bundles you released (*.sigstore.json, *.sigstore, *.bundle.json; repeatable)")
	fl.StringArrayVar(&digests, "released-digest", nil, "digest of a released artifact as the log records it, sha256:HEX (repeatable)")
	fl.BoolVar(&initState, "init", false, "create the state file from the log's current checkpoint (first run)")
	fl.Int64Var(&fromIndex, "from-index", -1, "with --init: read the log from this index instead of its current size")
	fl.BoolVar(&once, "once", false, "check once and exit (the default; for cron and CI)")
	fl.BoolVar(&follow, "follow", false, "keep checking every --interval until interrupted")
	fl.DurationVar(&interval, "interval", 5*time.Minute, "with --follow: time between checks")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of each request to the log")
	return cmd
}

func exitFor(alerts int) error {
	if alerts > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

// monitorWriter prints findings and summaries, as text or JSON lines
// (docs/JSON.md).
type monitorWriter struct {
	w    io.Writer
	json bool
	err  error // the first failed write
}

// note keeps the first write error.
func (m *monitorWriter) note(err error) {
	if m.err == nil {
		m.err = err
	}
}

func (m *monitorWriter) finding(f monitor.Finding) {
	if m.json {
		line := struct {
			ReportVersion int `json:"reportVersion"`
			monitor.Finding
		}{reportVersion, f}
		m.note(json.NewEncoder(m.w).Encode(line))
		return
	}
	level := "notice"
	if f.Alert {
		level = "ALERT"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: log %s index %d", level, f.Kind, textsafe.Escape(f.Log), f.LogIndex)
	if f.Identity != "" {
		fmt.Fprintf(&b, ", signed by %s", textsafe.Quote(f.Identity))
		if f.Issuer != "" {
			fmt.Fprintf(&b, " (issuer %s)", textsafe.Quote(f.Issuer))
		}
	}
	if f.KeyID != "" {
		fmt.Fprintf(&b, ", signed by the key %s", f.KeyID)
	}
	if f.Digest != "" {
		fmt.Fprintf(&b, ", artifact %s", f.Digest)
	}
	if s := f.Source; s != nil {
		fmt.Fprintf(&b, ", source %s commit %s ref %s", textsafe.Quote(s.Repository), textsafe.Quote(s.Commit), textsafe.Quote(s.Ref))
	}
	if f.IntegratedTime != nil {
		fmt.Fprintf(&b, ", integrated %s", f.IntegratedTime.UTC().Format(time.RFC3339))
	}
	if f.Detail != "" {
		fmt.Fprintf(&b, ": %s", textsafe.Escape(f.Detail))
	}
	_, err := fmt.Fprintln(m.w, b.String())
	m.note(err)
}

func (m *monitorWriter) summary(res *monitor.Result, statePath string) {
	if m.json {
		line := struct {
			ReportVersion int    `json:"reportVersion"`
			Kind          string `json:"kind"`
			LogIndex      uint64 `json:"logIndex"`
			Log           string `json:"log"`
			URL           string `json:"url"`
			From          uint64 `json:"from"`
			To            uint64 `json:"to"`
			Watched       int    `json:"watched"`
			Released      int    `json:"released"`
			Alerts        int    `json:"alerts"`
			Notices       int    `json:"notices"`
			State         string `json:"state"`
		}{reportVersion, "run", res.To, res.Log, res.URL, res.From, res.To, res.Watched, res.Released, res.Alerts, res.Notices, statePath}
		m.note(json.NewEncoder(m.w).Encode(line))
		return
	}
	fmt.Fprintf(m.w, "log %s: checked entries %d to %d (%d entry bundles, %d hash tiles): %d by a watched signer, %d of them released; %d alerts, %d notices; state written to %s\n",
		textsafe.Escape(res.Log), res.From, res.To, res.Bundles, res.HashTiles, res.Watched, res.Released, res.Alerts, res.Notices, textsafe.Escape(statePath))
}

// clientWithTimeout is the app's HTTP client (tests set one), or the
// default, with a per-request timeout.
func clientWithTimeout(a *app, timeout time.Duration) *http.Client {
	c := &http.Client{}
	if a.httpClient != nil {
		*c = *a.httpClient
	}
	c.Timeout = timeout
	return c
}
