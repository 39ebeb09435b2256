package main

import (
	"errors"
	"io"

	"github.com/mcpsign/mcpsign/verify"
)

// writeVerifyText writes the human report (verify.WriteResultText), with
// bundleHint after a bundle that cannot be read, unless the bundle was the
// one the server advertises (its refusal says so itself).
func writeVerifyText(w io.Writer, res *verify.Result, verr error) error {
	var opts verify.TextOptions
	if !errors.Is(verr, errAdvertised) {
		opts.BundleHint = bundleHint
	}
	return verify.WriteResultText(w, res, verr, opts)
}
