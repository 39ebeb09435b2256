// Package proxyhint is the hint that 'mcpsign proxy' and mcpsign-proxy add
// to a session's error: the flags of 'mcpsign proxy' that fix it. It is the
// CLIs' (a library names no flags) and links nothing more than
// internal/app/proxycmd does, so that mcpsign-proxy stays small.
package proxyhint

import (
	"errors"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// Hint returns the flags of 'mcpsign proxy' that fix err, the error of a
// session run under cfg, or "" when no flag does.
func Hint(err error, cfg *proxycmd.Config) string {
	if errors.Is(err, mcpwire.ErrUnauthorized) || errors.Is(err, mcpwire.ErrForbidden) {
		switch {
		case cfg.OAuth != nil:
			return ""
		case len(cfg.Headers) == 0:
			return "give them with --oauth (a sign-in), or --header 'Authorization: Bearer ${TOKEN}' (TOKEN read from the environment)"
		default:
			return "check the values of --header"
		}
	}
	return ""
}
