package proxycmd

import (
	"context"
	"io"
	"os"

	"github.com/mcpsign/mcpsign/proxy"
)

// HandOver replaces the process with mcpsign-proxy (Executable, Exec) to
// run c, when it is installed beside the running executable. verifyArgs,
// when not nil, are the arguments after the running executable of the
// command that verifies definitions (Config.VerifyCommand), and
// advertisedArg the one of them that names the server's advertised
// capabilities (Config.VerifyAdvertisedArg). It reports false when there
// is no mcpsign-proxy to hand over to, and returns only on that or on a
// failed exec.
func HandOver(c *Config, verifyArgs []string, advertisedArg string) (bool, error) {
	lean, ok := Executable()
	if !ok {
		return false, nil
	}
	if verifyArgs != nil {
		self, err := os.Executable()
		if err != nil {
			return false, nil
		}
		c.VerifyCommand = append([]string{self}, verifyArgs...)
		c.VerifyAdvertisedArg = advertisedArg
	}
	return true, Exec(lean, c)
}

// StartOptions say how Start runs a proxy.
type StartOptions struct {
	// HandOver, when set, hands the session over to mcpsign-proxy
	// (HandOver with the arguments of the verify command; tests leave it
	// nil). It reports false when there is none to hand over to.
	HandOver func(cfg *Config, verifyArgs []string) (bool, error)
	// VerifyArgs are the arguments HandOver gives the verify command, when
	// definitions are verified (a VerifyFunc); nil otherwise.
	VerifyArgs []string
	// Hint is what the CLI adds to a session's error (Run).
	Hint           Hint
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Start runs the proxy of cfg from the command line that checked it: when
// cfg.OAuth is set it signs in first (OAuthConfig.SignIn), before the
// hand-over and before the session's time limits, on Stderr (the host
// shows it; nothing of it on Stdout), so that the proxy then finds the
// token in the cache; then it hands the session over (o.HandOver) or, with
// no mcpsign-proxy to hand over to, runs it in this process (Run, with
// verify). It returns the exit code of a session run here (ExitOK after
// a hand-over that returned), or the error of the sign-in or of a failed
// hand-over.
func Start(ctx context.Context, cfg *Config, verify proxy.VerifyFunc, o StartOptions) (int, error) {
	if cfg.OAuth != nil {
		if _, err := cfg.OAuth.SignIn(ctx, cfg.URL, o.Stderr); err != nil {
			return ExitError, err
		}
	}
	if o.HandOver != nil {
		handed, err := o.HandOver(cfg, o.VerifyArgs)
		if err != nil {
			return ExitError, err
		}
		if handed {
			return ExitOK, nil
		}
	}
	return Run(ctx, cfg, verify, o.Hint, o.Stdin, o.Stdout, o.Stderr), nil
}
