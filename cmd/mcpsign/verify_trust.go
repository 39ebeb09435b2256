package main

import (
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/verify"
)

// trustFlagHint says a verify.LoadTrust failure with the flags that fix
// it; the error still wraps the *verify.TrustError.
func trustFlagHint(err error, m verify.Method) error {
	var te *verify.TrustError
	if !errors.As(err, &te) {
		return err
	}
	var msg string
	switch te.Kind {
	case verify.ErrTrustedRoot:
		msg = fmt.Sprintf("--trusted-root: %v", te.Err)
	case verify.ErrNoTrustedRoot:
		msg = fmt.Sprintf("no trusted root: %v (pass --trusted-root FILE, a Sigstore trusted_root.json, or run 'mcpsign trustroot fetch' while online)", te.Err)
	case verify.ErrNoCARoots:
		msg = "the certificate method needs the enterprise roots: pass --ca-roots FILE (PEM) and, if the bundle does not carry them, --ca-intermediates FILE"
	case verify.ErrCARoots:
		msg = fmt.Sprintf("--ca-roots/--ca-intermediates: %v", te.Err)
	case verify.ErrCAsUnused:
		msg = fmt.Sprintf("--ca-roots and --ca-intermediates are for 'mcpsign verify certificate', not the %s method", m)
	default:
		return err
	}
	return &flagError{msg: msg, err: err}
}
