// Package service is the operational shell of mcpsign's long-running HTTP
// services (`mcpsign serve`, the MCP front, and `mcpsign registry serve`):
// one listener with TLS or a loopback address, bounded requests, /healthz,
// /readyz and Prometheus /metrics, JSON logs with an access line per
// request, SIGHUP reloads, and a graceful drain when its context ends.
// The caller mounts its own routes (Options.Handler) and wraps them with
// the middlewares of this package (CheckOrigin, BearerTokens, CORS).
//
// docs/DEPLOY.md describes the surface for operators.
package service

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpsign/mcpsign/internal/loopback"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Options' zero fields.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultDrainTimeout      = 20 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxBodyBytes      = 4 << 20
	DefaultReadBodyTimeout   = 60 * time.Second
)

// ReadyTimeout bounds a call of Options.Ready: a probe is answered within
// it (Kubernetes gives a probe 1 s by default: a Ready that needs longer
// should answer from a state it keeps up to date, not check on each call).
const ReadyTimeout = 5 * time.Second

// The operational routes Run serves itself, before Options.Handler.
const (
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// Options configure Run. Only Handler is required.
type Options struct {
	// Listen is the TCP address to listen on (host:port); DefaultListen
	// when empty. An address that is not loopback (loopback.IsHost:
	// 0.0.0.0, ":8080", a LAN address) is refused without TLS unless
	// AllowPlaintext is set.
	Listen string
	// Listener, when not nil, is used instead of listening on Listen (a
	// socket handed over by a supervisor, or a test's); the same loopback
	// rule applies to its address. Run closes it.
	Listener net.Listener
	// AllowPlaintext allows plain HTTP on a non-loopback address: for a
	// sidecar whose TLS ends at a mesh or an ingress in front of it.
	AllowPlaintext bool
	// TLSCert and TLSKey are PEM files of a certificate chain and its key;
	// both or neither. They are read at start (an error ends Run) and again
	// on each SIGHUP (an error keeps the pair in use and is logged).
	TLSCert, TLSKey string

	// Handler serves every path but the operational routes (HealthPath,
	// ReadyPath, MetricsPath): the caller's mux with /mcp or /v0.1/….
	// Requests reach it with bodies bounded by MaxBodyBytes. When it is an
	// *http.ServeMux, the pattern it matched labels the request metrics.
	Handler http.Handler
	// Ready reports whether the service can answer: nil for ready, else
	// the reason, which /readyz answers with 503 as JSON. Nil means ready
	// once listening. While draining, /readyz answers 503 "draining".
	Ready func(ctx context.Context) error
	// Collectors are registered beside the Go and process collectors on
	// the registry that /metrics exposes; their metrics are named
	// mcpsign_….
	Collectors []prometheus.Collector
	// Logger receives JSON lines: the start, an access line per request,
	// reloads, the drain. NewLogger(os.Stderr, nil) when nil. A logger
	// not made by NewLogger must escape what clients and servers wrote.
	Logger *slog.Logger

	// Listening, when not nil, is called once Run serves on addr (with
	// scheme http or https) and SIGHUP reloads: a command prints where it
	// listens from it, so that whoever reads that line may signal at once.
	Listening func(addr net.Addr, scheme string)

	// Reload is called on each SIGHUP (with the TLS pair re-read): it
	// re-reads configuration and swaps it in only when all of it is good.
	// Its error is logged and counted; what was in force stays.
	Reload func(ctx context.Context) error
	// Drain is called when ctx ends, after the listener closed and while
	// requests in flight are being answered: it ends what would otherwise
	// never end (event streams, sessions). Its context expires with
	// DrainTimeout.
	Drain func(ctx context.Context) error
	// DrainTimeout bounds the drain: requests still running then are cut
	// and Run returns a *DrainError. DefaultDrainTimeout when zero.
	DrainTimeout time.Duration

	// ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes bound the
	// connection as http.Server's fields; MaxBodyBytes bounds a request's
	// body (413 past it), ReadBodyTimeout the time from its headers to
	// the end of its body (408 past it: a client that trickles its body
	// holds nothing longer; the response, an event stream, is not
	// bounded). The defaults when zero are the Default… constants.
	ReadHeaderTimeout time.Duration
	ReadBodyTimeout   time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxBodyBytes      int64
}

// ErrPlaintextListen is wrapped by Run's error for a non-loopback listen
// address without TLS and without Options.AllowPlaintext.
var ErrPlaintextListen = errors.New("plain HTTP on an address that is not loopback")

// ErrOptions is wrapped by Run's error for options that cannot work
// together (no Handler, a TLS certificate without its key).
var ErrOptions = errors.New("invalid service options")

// ListenError is Run's error when it cannot listen on Addr.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return "listen on " + e.Addr + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// TLSError is the error of a certificate and key pair that cannot be
// loaded, at start or on SIGHUP.
type TLSError struct {
	Cert, Key string
	Err       error
}

func (e *TLSError) Error() string {
	return "TLS certificate " + e.Cert + " and key " + e.Key + ": " + e.Err.Error()
}
func (e *TLSError) Unwrap() error { return e.Err }

// DrainError is Run's error when requests were still running at the end
// of the drain timeout (they were cut), or when Drain failed.
type DrainError struct {
	Timeout time.Duration
	Err     error
}

func (e *DrainError) Error() string {
	return fmt.Sprintf("drain did not finish within %s: %v", e.Timeout, e.Err)
}
func (e *DrainError) Unwrap() error { return e.Err }

// Run serves until ctx ends, then drains: the listener is closed (new
// connections are refused), /readyz answers 503, Drain is called, and
// every request in flight is answered before Run returns nil. Within
// DrainTimeout; past it the remaining connections are closed and Run
// returns a *DrainError. The caller ends ctx on SIGINT and SIGTERM (the
// CLI's internal/interrupt), so a clean drain exits 0. Run handles SIGHUP
// itself while it runs (Options.Reload). An error before serving (the
// options, the TLS pair, the listener) is returned at once.
func Run(ctx context.Context, opts Options) error {
	s, err := newServer(opts)
	if err != nil {
		if opts.Listener != nil {
			opts.Listener.Close()
		}
		return err
	}
	return s.run(ctx)
}

type server struct {
	opts     Options
	log      *slog.Logger
	cert     atomic.Pointer[tls.Certificate]
	draining atomic.Bool
	metrics  *metrics
	http     *http.Server
}

func newServer(opts Options) (*server, error) {
	if opts.Handler == nil {
		return nil, fmt.Errorf("%w: no handler", ErrOptions)
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, fmt.Errorf("%w: a TLS certificate and its key go together", ErrOptions)
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadBodyTimeout <= 0 {
		opts.ReadBodyTimeout = DefaultReadBodyTimeout
	}
	s := &server{opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = NewLogger(os.Stderr, nil)
	}
	m, err := newMetrics(opts.Collectors)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if opts.TLSCert != "" {
		if err := s.loadCert(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// loadCert reads the TLS pair and puts it in force, or keeps the one in
// force and returns why not.
func (s *server) loadCert() error {
	c, err := tls.LoadX509KeyPair(s.opts.TLSCert, s.opts.TLSKey)
	if err != nil {
		return &TLSError{Cert: s.opts.TLSCert, Key: s.opts.TLSKey, Err: err}
	}
	s.cert.Store(&c)
	return nil
}

// listen returns the listener, refusing plain HTTP off loopback.
func (s *server) listen() (net.Listener, error) {
	addr := s.opts.Listen
	if s.opts.Listener != nil {
		addr = s.opts.Listener.Addr().String()
	}
	if err := CheckPlaintext(addr, s.opts.TLSCert != "", s.opts.AllowPlaintext); err != nil {
		return nil, err
	}
	if s.opts.Listener != nil {
		return s.opts.Listener, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	return ln, nil
}

// CheckPlaintext is Run's rule for the listen address addr (host:port):
// plain HTTP (tls false) on an address that is not loopback
// (loopback.IsHost) is refused unless allowPlaintext; the error wraps
// ErrPlaintextListen. A caller that listens itself checks it first, so
// that it never says it listens on an address Run then refuses.
func CheckPlaintext(addr string, tls, allowPlaintext bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &ListenError{Addr: addr, Err: err}
	}
	if !tls && !allowPlaintext && !loopback.IsHost(host) {
		return fmt.Errorf("listen on %s: %w: give a TLS certificate and key, or allow plain HTTP explicitly (behind a TLS-terminating proxy)", addr, ErrPlaintextListen)
	}
	return nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET "+ReadyPath, s.serveReady)
	mux.Handle("GET "+MetricsPath, s.metrics.handler())
	mux.Handle("/", LimitBody(s.opts.MaxBodyBytes, s.opts.ReadBodyTimeout)(s.opts.Handler))
	return s.observe(mux)
}

// serveReady answers /readyz: 200 {"ready":true}, or 503 with the reason.
func (s *server) serveReady(w http.ResponseWriter, r *http.Request) {
	var reason error
	switch {
	case s.draining.Load():
		reason = errors.New("draining")
	case s.opts.Ready != nil:
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		reason = s.opts.Ready(ctx)
		cancel()
	}
	if reason != nil {
		s.metrics.ready.Set(0)
		// The reason can name a server's text (a drifted upstream): it is
		// escaped where it is printed, by the client that shows it, and in
		// the log line by the logger.
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": reason.Error()})
		return
	}
	s.metrics.ready.Set(1)
	writeJSON(w, http.StatusOK, map[string]any{"ready": true})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (s *server) run(ctx context.Context) error {
	ln, err := s.listen()
	if err != nil {
		if s.opts.Listener != nil {
			s.opts.Listener.Close()
		}
		return err
	}
	scheme := "http"
	if s.opts.TLSCert != "" {
		scheme = "https"
		ln = tls.NewListener(ln, &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return s.cert.Load(), nil
			},
			NextProtos: []string{"h2", "http/1.1"},
		})
	}
	// Requests see a context that outlives ctx: the drain lets them
	// finish; it is canceled when the drain gives up on them.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	listenerClosed := make(chan struct{})
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.http.RegisterOnShutdown(func() { close(listenerClosed) })

	var wg sync.WaitGroup
	defer wg.Wait()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reloadCtx, stopReloads := context.WithCancel(ctx)
	defer stopReloads()
	wg.Go(func() { s.reloads(reloadCtx, hup) })

	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()
	s.log.Info("listening", "address", ln.Addr().String(), "scheme", scheme)
	if s.opts.Listening != nil {
		s.opts.Listening(ln.Addr(), scheme)
	}

	select {
	case err := <-served:
		// Serve ends only on a listener error before any shutdown.
		return &ListenError{Addr: ln.Addr().String(), Err: err}
	case <-ctx.Done():
	}
	stopReloads()
	return s.drain(ctx, served, listenerClosed, cancelBase)
}

// drain stops accepting, calls Drain, and waits for the requests in flight
// within DrainTimeout.
func (s *server) drain(ctx context.Context, served chan error, listenerClosed chan struct{}, cancelBase func()) error {
	s.draining.Store(true)
	start := time.Now()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.DrainTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.http.Shutdown(dctx) }()
	<-listenerClosed
	// Said once no new connection is accepted.
	s.log.Info("draining", "cause", context.Cause(ctx).Error(), "timeout", s.opts.DrainTimeout.String())
	var drainErr error
	if s.opts.Drain != nil {
		drainErr = s.opts.Drain(dctx)
	}
	err := <-shut
	<-served // http.ErrServerClosed
	if err != nil {
		cancelBase()
		s.http.Close()
		s.log.Error("drain timed out", "after", time.Since(start).String(), "error", err)
		return &DrainError{Timeout: s.opts.DrainTimeout, Err: errors.Join(err, drainErr)}
	}
	if drainErr != nil {
		s.log.Error("drain failed", "error", drainErr)
		return &DrainError{Timeout: s.opts.DrainTimeout, Err: drainErr}
	}
	s.log.Info("drained", "after", time.Since(start).String())
	return nil
}

// reloads calls Reload (and re-reads the TLS pair) on each SIGHUP until
// ctx ends; a failure is logged and counted, and what was in force stays.
func (s *server) reloads(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		s.log.Info("reloading", "signal", "SIGHUP")
		var errs []error
		if s.opts.TLSCert != "" {
			errs = append(errs, s.loadCert())
		}
		if s.opts.Reload != nil {
			errs = append(errs, s.opts.Reload(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			s.metrics.reloads.WithLabelValues("failed").Inc()
			s.log.Error("reload failed; what failed to load is kept as it was", "error", err)
			continue
		}
		s.metrics.reloads.WithLabelValues("ok").Inc()
		s.log.Info("reloaded")
	}
}

// HoldHangup makes SIGHUP do nothing until release is called, so that a
// SIGHUP that comes before Run handles it (while the caller loads what it
// will serve: a first verification run can take minutes) does not end the
// process, SIGHUP's default action. What it loads then is what the files
// hold then. Run handles SIGHUP itself while it runs; call release after
// Run returned.
func HoldHangup() (release func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return func() { signal.Stop(c) }
}
