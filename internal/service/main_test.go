package service

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/interrupt"
)

// TestMain runs the test binary as a service (MCPSIGN_SERVICE_CHILD set):
// the process a test sends signals to; else the tests.
func TestMain(m *testing.M) {
	if os.Getenv("MCPSIGN_SERVICE_CHILD") != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child serves GET /slow (answered 300 ms after it came) on a loopback
// port until SIGINT or SIGTERM, as the CLI does: 0 after a clean drain.
func child() int {
	log := NewLogger(os.Stderr, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		log.Info("slow request in handler")
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "finished")
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := interrupt.Notify(cancel)
	defer stop()
	if err := Run(ctx, Options{Listen: "127.0.0.1:0", Handler: mux, Logger: log, DrainTimeout: 5 * time.Second}); err != nil {
		log.Error("service", "error", err)
		return 2
	}
	return 0
}
