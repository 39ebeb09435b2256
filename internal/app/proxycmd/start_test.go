package proxycmd

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestStart(t *testing.T) {
	t.Parallel()
	errExec := errors.New("exec failed")
	lock := filepath.Join(t.TempDir(), "s.lock")
	for name, tc := range map[string]struct {
		cfg        *Config
		handOver   func(*Config, []string) (bool, error)
		wantCode   int
		wantErr    func(error) bool
		wantHanded bool
		wantStderr string
	}{
		"handed over": {&Config{Lock: lock, Command: []string{"x"}}, func(*Config, []string) (bool, error) { return true, nil },
			ExitOK, nil, true, ""},
		"a failed hand-over": {&Config{Lock: lock, Command: []string{"x"}}, func(*Config, []string) (bool, error) { return true, errExec },
			ExitError, func(err error) bool { return errors.Is(err, errExec) }, true, ""},
		"nothing to hand over to: run here": {&Config{Lock: lock}, func(*Config, []string) (bool, error) { return false, nil },
			ExitError, nil, true, ErrNoCommand.Error()},
		"no hand-over: run here": {&Config{Lock: lock}, nil, ExitError, nil, false, ErrNoCommand.Error()},
		"the sign-in fails first": {&Config{Lock: lock, URL: "https://mcp.example/mcp",
			OAuth: &OAuthConfig{ClientID: "c", SecretEnv: "MCPSIGN_TEST_UNSET_SECRET", CacheDir: t.TempDir()}},
			func(*Config, []string) (bool, error) { t.Error("handed over after a failed sign-in"); return true, nil },
			ExitError, func(err error) bool { return errors.As(err, new(*SecretEnvError)) }, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			handed := false
			var handOver func(*Config, []string) (bool, error)
			if tc.handOver != nil {
				handOver = func(c *Config, args []string) (bool, error) {
					handed = true
					if len(args) != 1 || args[0] != "proxy-verify" {
						t.Errorf("verify args %q", args)
					}
					return tc.handOver(c, args)
				}
			}
			code, err := Start(context.Background(), tc.cfg, nil, StartOptions{HandOver: handOver, VerifyArgs: []string{"proxy-verify"},
				Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if (tc.wantErr == nil) != (err == nil) || (err != nil && !tc.wantErr(err)) || code != tc.wantCode || handed != tc.wantHanded {
				t.Errorf("Start: %d, %v (handed %v)", code, err, handed)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) || (tc.wantStderr == "" && stderr.Len() > 0) || stdout.Len() > 0 {
				t.Errorf("stderr %q, stdout %q", stderr.String(), stdout.String())
			}
		})
	}
}
