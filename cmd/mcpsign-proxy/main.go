// Command mcpsign-proxy is the small executable that runs 'mcpsign proxy'.
//
// mcpsign parses and checks the proxy's command line, then replaces itself
// with mcpsign-proxy (exec: same process, same streams), handing it the
// parsed configuration in the environment. mcpsign-proxy links the proxy,
// the lock and the digests, and not the signing, TUF and verification code,
// so that a proxy that lives as long as its host's session stays small.
// When definitions need approving (signed first use, a signed update), it
// runs 'mcpsign proxy-verify' with the same flags. Install it beside
// mcpsign (go install github.com/mcpsign/mcpsign/cmd/...); without it,
// mcpsign runs the proxy itself.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/mcpsign/mcpsign/internal/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/proxy"
)

func main() {
	cfg, err := proxycmd.ConfigFromEnv()
	if err != nil {
		msg := err.Error()
		if errors.Is(err, proxycmd.ErrNotHandedOver) {
			msg += ": run 'mcpsign proxy --help'"
		}
		fmt.Fprintf(os.Stderr, "mcpsign: %s\n", textsafe.Escape(msg))
		os.Exit(proxycmd.ExitError)
	}
	var verify proxy.VerifyFunc
	if len(cfg.VerifyCommand) > 0 {
		verify = proxy.CommandVerifier(cfg.VerifyCommand, cfg.VerifyAdvertisedArg)
	}
	stdin, stdout, restore := proxycmd.PollableStdio()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := proxycmd.Run(ctx, cfg, verify, stdin, stdout, os.Stderr)
	stop()
	restore()
	runtime.KeepAlive(stdin) // their finalizers would close fds 0 and 1
	runtime.KeepAlive(stdout)
	os.Exit(code)
}
