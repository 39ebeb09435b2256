//go:build !unix

package proxycmd

import "errors"

// Executable reports false: the proxy runs in mcpsign's own process where
// exec(2) does not exist.
func Executable() (string, bool) { return "", false }

// Exec is not supported here.
func Exec(path string, cfg *Config) error { return errors.ErrUnsupported }
