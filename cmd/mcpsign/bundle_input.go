package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

// bundleInput is the bundle of the verify flags (pinbundle.Location): a
// file or an https URL (--bundle), or the server itself
// (--bundle-from-server, docs/DISCOVERY.md); Read with the snapshot reads
// the server's.
type bundleInput struct{ pinbundle.Location }

// newBundleInput reads the flags; a nil input means no bundle was given.
func newBundleInput(a *app, f *verifyFlags) (*bundleInput, error) {
	vo := &f.vo
	opts := f.bundleOptions(a)
	switch {
	case vo.Bundle != "" && vo.BundleFromServer:
		return nil, errors.New("give --bundle or --bundle-from-server, not both")
	case vo.BundleFromServer:
		return &bundleInput{pinbundle.Location{FromServer: true, Options: opts}}, nil
	case vo.Bundle == "":
		return nil, nil
	}
	return &bundleInput{pinbundle.LocationOf(vo.Bundle, opts)}, nil
}

// bundleOptions fetch bundles: a URL the operator named (--bundle, a
// policy's) on any address; the bundle URL the server advertises only on
// the addresses the server's own allows (f.served, docs/DISCOVERY.md).
func (f *verifyFlags) bundleOptions(a *app) source.BundleOptions {
	return source.BundleOptions{HTTPClient: a.httpClient, Addresses: source.AnyAddress, Served: f.served}
}

// early reads a bundle file or fetches a bundle URL, before the source is
// read; a bundle from the server comes only with its snapshot (nil here).
func (b *bundleInput) early(ctx context.Context) ([]byte, error) {
	data, err := b.Early(ctx)
	return data, bundleFlag(err)
}

// bundleFlag names --bundle in the error of a bundle file or URL that
// cannot be read (*pinbundle.ReadError).
func bundleFlag(err error) error {
	if errors.As(err, new(*pinbundle.ReadError)) {
		return fmt.Errorf("--bundle: %w", err)
	}
	return err
}

// verifier is the proxy's VerifyFunc of the input.
func (b *bundleInput) verifier(v *verify.Verifier) proxy.VerifyFunc {
	return flagHinted(func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		// The bundle read for this call, for what a failed signature or
		// log step did not match (explainFailure), as 'verify' says it.
		var data []byte
		got, err := pinbundle.VerifierOf(v, func(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
			d, err := b.Fresh(ctx, snap)
			data = d
			return d, bundleFlag(err)
		})(ctx, snap)
		if err != nil && data != nil {
			err = explainFailure(err, data, v)
		}
		return got, err
	})
}

// flagHinted says the errors of the proxy's verification vf with the flags
// that fix them (withFlagHint), a bundle file that cannot be read anew as
// such.
func flagHinted(vf proxy.VerifyFunc) proxy.VerifyFunc {
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		v, err := vf(ctx, snap)
		var re *pinbundle.ReadError
		if errors.As(err, &re) && re.Location.File != "" {
			err = fmt.Errorf("reading the bundle: %w", err)
		}
		return v, withFlagHint(err)
	}
}

// reportVerify writes the report of a verification (writeVerifyReport) and
// returns its exit (verifyExit); res is nil for one that failed before it
// began (the server's bundle was refused), reported as a failed step.
func reportVerify(a *app, asJSON bool, res *verify.Result, verr error) error {
	if err := writeVerifyReport(a, asJSON, res, verr); err != nil {
		return err
	}
	return verifyExit(verr, !asJSON)
}

// writeVerifyReport writes the report of a verification on stdout, as
// JSON or text (verify.WriteResultText), the text with bundleHint after a
// bundle that cannot be read, unless the bundle was the one the server
// advertises (its refusal says so itself).
func writeVerifyReport(a *app, asJSON bool, res *verify.Result, verr error) error {
	if asJSON {
		return writeJSON(a.stdout, verify.NewReport(res, verr))
	}
	var opts verify.TextOptions
	if !errors.Is(verr, pinbundle.ErrAdvertised) {
		opts.BundleHint = bundleHint
	}
	return verify.WriteResultText(a.stdout, res, verr, opts)
}
