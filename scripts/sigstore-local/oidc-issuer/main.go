// Command oidc-issuer runs the test OIDC issuer of the local Sigstore stack.
//
//	oidc-issuer -addr 127.0.0.1:5556 -issuer http://127.0.0.1:5556 -key state/keys/oidc-key.pem
//
// GET /token?email=alice@example.com[&sub=...][&aud=sigstore][&ttl=1h] returns
// a raw RS256 ID token. It hands a token to anyone who asks: keep it on
// loopback and use it for tests only.
//
// With -github-path /github (start.sh passes it) a second issuer, ISSUER/github,
// is served under that path, for Fulcio's github-workflow issuer type: its
// tokens carry the GitHub Actions claims given as claim.NAME=VALUE, e.g.
// GET /github/token?sub=repo:acme/notes:ref:refs/tags/v1&claim.repository=acme/notes&...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
)

func main() {
	if err := run(); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:5556", "listen address")
	issuer := flag.String("issuer", "", "issuer URL, exactly as in tokens (default http://ADDR)")
	keyPath := flag.String("key", "", "PEM file of the RSA signing key; created with mode 0600 if missing (required)")
	ghPath := flag.String("github-path", "", "also serve a second issuer, ISSUER+PATH, under PATH (e.g. /github), for GitHub Actions-style tokens")
	flag.Parse()
	if *keyPath == "" || flag.NArg() != 0 {
		flag.Usage()
		return errors.New("oidc-issuer: -key is required and no arguments are accepted")
	}
	if *issuer == "" {
		*issuer = "http://" + *addr
	}
	key, err := oidcissuer.LoadOrCreateKey(*keyPath)
	if err != nil {
		return err
	}
	is, err := oidcissuer.New(*issuer, key)
	if err != nil {
		return err
	}
	var h http.Handler = is
	if *ghPath != "" {
		if !strings.HasPrefix(*ghPath, "/") || strings.HasSuffix(*ghPath, "/") || strings.Count(*ghPath, "/") != 1 {
			return fmt.Errorf("oidc-issuer: -github-path %q must be one path segment, like /github", *ghPath)
		}
		gh, err := oidcissuer.New(*issuer+*ghPath, key)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/", is)
		mux.Handle(*ghPath+"/", http.StripPrefix(*ghPath, gh))
		h = mux
		log.Printf("oidc-issuer: also serving issuer %s", gh.URL())
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("oidc-issuer: listen: %w", err)
	}
	srv := &http.Server{Handler: logRequests(h), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("oidc-issuer: serving issuer %s on %s (kid %s)", is.URL(), ln.Addr(), is.KeyID())
	select {
	case err := <-errc:
		return fmt.Errorf("oidc-issuer: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("oidc-issuer: shutdown: %w", err)
	}
	log.Print("oidc-issuer: stopped")
	return nil
}

// logRequests logs method, path and status; never the query (it holds the
// requested identity) nor the response (it holds the token).
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Printf("%s %s %d", r.Method, r.URL.Path, rec.status)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
