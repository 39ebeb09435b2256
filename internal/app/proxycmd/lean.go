package proxycmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/mcpsign/mcpsign/internal/interrupt"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/proxy"
)

// LeanProcess is mcpsign-proxy as a process: Lean, canceled by the first
// SIGINT or SIGTERM ("interrupted: SIGTERM received"; a second signal has
// its default effect, as in mcpsign).
func LeanProcess(hint Hint) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := interrupt.Notify(cancel)
	code := Lean(ctx, hint)
	stop()
	cancel(nil)
	return code
}

// Lean is the main function of mcpsign-proxy (cmd/mcpsign-proxy; the tests
// run it in a re-executed test binary): it runs the proxy of the
// configuration mcpsign handed over in the environment (ConfigFromEnv) on the
// process's standard streams until ctx is done or the session ends, and
// returns the exit status; hint is Run's.
func Lean(ctx context.Context, hint Hint) int {
	cfg, err := ConfigFromEnv()
	if err != nil {
		msg := err.Error()
		if errors.Is(err, ErrNotHandedOver) {
			msg += ": run 'mcpsign proxy --help'"
		}
		fmt.Fprintf(os.Stderr, "mcpsign: %s\n", textsafe.Escape(msg))
		return ExitError
	}
	var verify proxy.VerifyFunc
	if len(cfg.VerifyCommand) > 0 {
		verify = proxy.CommandVerifier(cfg.VerifyCommand, cfg.VerifyAdvertisedArg)
	}
	stdin, stdout, restore := PollableStdio()
	code := Run(ctx, cfg, verify, hint, stdin, stdout, os.Stderr)
	restore()
	runtime.KeepAlive(stdin) // their finalizers would close fds 0 and 1
	runtime.KeepAlive(stdout)
	return code
}
