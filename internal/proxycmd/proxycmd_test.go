package proxycmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	v := strconv.Quote(BuildVersion())
	tests := []struct {
		name    string
		value   *string
		wantErr string
	}{
		{"missing: started by hand", nil, "started by 'mcpsign proxy'"},
		{"not JSON", ptr("{"), EnvConfig},
		{"an unknown member", ptr(`{"version":` + v + `,"lock":"l","command":["s"],"verifyComand":["x"]}`), "unknown field"},
		{"another version", ptr(`{"version":"v0.0.1","lock":"l","command":["s"]}`), `started by mcpsign "v0.0.1": install both from one release`},
		{"another version, with a member we do not know", ptr(`{"version":"v9.0.0","lock":"l","command":["s"],"sandbox":true}`), `started by mcpsign "v9.0.0"`},
		{"no version", ptr(`{"lock":"l","command":["s"]}`), `started by mcpsign ""`},
		{"too large", ptr(`{"lock":"` + strings.Repeat("a", maxConfigBytes) + `"}`), "larger than"},
		{"good", ptr(`{"version":` + v + `,"lock":"l","tofu":true,"command":["s","--flag"],"verifyCommand":["mcpsign","proxy-verify","--key=k.pub"]}`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.value == nil {
				os.Unsetenv(EnvConfig)
			} else {
				t.Setenv(EnvConfig, *tc.value)
			}
			cfg, err := ConfigFromEnv()
			if _, still := os.LookupEnv(EnvConfig); still {
				t.Errorf("%s is still in the environment: the server would inherit it", EnvConfig)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Lock != "l" || !cfg.TOFU || len(cfg.Command) != 2 || len(cfg.VerifyCommand) != 3 {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestRunRefuses checks the errors Run reports before any server starts:
// exit 2 and a message naming the problem and the file.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	edited := filepath.Join(dir, "edited.lock")
	if err := os.WriteFile(edited, []byte(`{"kind":"mcpsign.lock","lockVersion":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	server := []string{"sh", "-c", "touch " + started}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no command", Config{Lock: "x.lock"}, ErrNoCommand.Error()},
		{"no lock flag", Config{Command: server}, ErrNoLockFile.Error()},
		{"no lock file", Config{Lock: filepath.Join(dir, "missing.lock"), Command: server}, "nothing approves a first use"},
		{"a bad lock", Config{Lock: edited, Command: server}, edited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), &tc.cfg, nil, strings.NewReader(""), &stdout, &stderr)
			if code != ExitError || !strings.HasPrefix(stderr.String(), "mcpsign: ") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr.String(), ExitError, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q", stdout.String())
			}
			if _, err := os.Stat(started); err == nil {
				t.Fatal("the server was started")
			}
		})
	}
}
