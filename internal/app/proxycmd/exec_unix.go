//go:build unix

package proxycmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Executable returns the path of mcpsign-proxy beside the running
// executable, and false when there is none (a go run, a test binary, an
// install of mcpsign alone): the caller then runs the proxy in its own
// process.
func Executable() (string, bool) {
	self, err := os.Executable()
	if err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	p := filepath.Join(filepath.Dir(self), ExecutableName)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return p, true
}

// Exec replaces the running process with the mcpsign-proxy at path, handing
// it cfg. The process keeps its ID, its standard streams and its
// environment (plus EnvConfig), so that a host sees no difference. It
// returns only on failure.
func Exec(path string, cfg *Config) error {
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	argv := append([]string{ExecutableName, "--lock", cfg.Lock, "--"}, cfg.Command...)
	if cfg.URL != "" {
		argv = append(argv, shownURL(cfg.URL))
	}
	env := append(withoutConfig(os.Environ()), EnvConfig+"="+string(data))
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	return nil
}
