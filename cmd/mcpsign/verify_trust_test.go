package main

import (
	"errors"
	"os"
	"testing"

	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// TestTrustFlagHint checks that each verify.LoadTrust failure is said with
// its flags, and still wraps the library's error.
func TestTrustFlagHint(t *testing.T) {
	for _, tc := range []struct {
		err  *verify.TrustError
		want string
	}{
		{&verify.TrustError{Kind: verify.ErrTrustedRoot, Err: os.ErrNotExist}, "--trusted-root: file does not exist"},
		{&verify.TrustError{Kind: verify.ErrNoTrustedRoot, Err: trustroot.ErrOffline},
			"no trusted root: offline: no usable cached TUF metadata (pass --trusted-root FILE, a Sigstore trusted_root.json, or run 'mcpsign trustroot fetch' while online)"},
		{&verify.TrustError{Kind: verify.ErrNoCARoots},
			"the certificate method needs the enterprise roots: pass --ca-roots FILE (PEM) and, if the bundle does not carry them, --ca-intermediates FILE"},
		{&verify.TrustError{Kind: verify.ErrCARoots, Err: trustroot.ErrNotCA}, "--ca-roots/--ca-intermediates: not a CA certificate"},
		{&verify.TrustError{Kind: verify.ErrCAsUnused}, "--ca-roots and --ca-intermediates are for 'mcpsign verify certificate', not the key method"},
	} {
		got := trustFlagHint(tc.err, verify.MethodKey)
		if got.Error() != tc.want || !errors.Is(got, tc.err.Kind) || (tc.err.Err != nil && !errors.Is(got, tc.err.Err)) {
			t.Errorf("%v: got %q", tc.err.Kind, got)
		}
	}
	other := errors.New("other")
	if got := trustFlagHint(other, verify.MethodKey); got != other {
		t.Errorf("another error changed: %v", got)
	}
}
