package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// serveService is what 'mcpsign serve' hands the operational shell: the
// fields of internal/service.Options of the same names (listener, TLS,
// probes, metrics, signals), which another change brings; runServeService
// is the minimal stand-in until then, and is replaced by a call of
// service.Run with these fields (Stderr aside: service logs "listening").
type serveService struct {
	Listen, TLSCert, TLSKey string
	Handler                 http.Handler // every other path: a mux with /mcp
	Ready, Reload, Drain    func(context.Context) error
	Collectors              []prometheus.Collector
	Logger                  *slog.Logger
	DrainTimeout            time.Duration
	Stderr                  io.Writer
}

// runServeService serves s until ctx ends (SIGINT, SIGTERM), then drains;
// SIGHUP reloads.
func runServeService(ctx context.Context, s serveService) error {
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.Listen, err)
	}
	reg := prometheus.NewRegistry()
	for _, c := range s.Collectors {
		if err := reg.Register(c); err != nil {
			ln.Close()
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Ready(r.Context()); err != nil {
			http.Error(w, textsafe.Escape(err.Error()), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	scheme := "http"
	if s.TLSCert != "" {
		scheme = "https"
	}
	// Before "listening": from then on a SIGHUP reloads.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fmt.Fprintf(s.Stderr, "mcpsign serve: listening on %s://%s/mcp\n", scheme, ln.Addr())
	errc := make(chan error, 1)
	go func() {
		if s.TLSCert != "" {
			errc <- srv.ServeTLS(ln, s.TLSCert, s.TLSKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		case <-hup:
			_ = s.Reload(context.WithoutCancel(ctx)) // said in the log
			continue
		case <-ctx.Done():
		}
		break
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.DrainTimeout)
	defer cancel()
	derr := s.Drain(dctx)
	if derr != nil {
		s.Logger.Warn("drain: requests still in flight were interrupted", "error", derr.Error())
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
