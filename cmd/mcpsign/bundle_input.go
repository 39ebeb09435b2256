package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

// bundleInput is where the bundle of the verify flags comes from: a file
// (--bundle FILE), an https URL (--bundle URL) or the server itself
// (--bundle-from-server, docs/DISCOVERY.md). However it comes, it is
// verified the same way.
type bundleInput struct {
	file, url  string
	fromServer bool
	opts       source.BundleOptions
}

// newBundleInput reads the flags; a nil input means no bundle was given.
func newBundleInput(a *app, vo *options.VerifyOptions) (*bundleInput, error) {
	b := &bundleInput{fromServer: vo.BundleFromServer, opts: source.BundleOptions{HTTPClient: a.httpClient}}
	switch {
	case vo.Bundle != "" && vo.BundleFromServer:
		return nil, errors.New("give --bundle or --bundle-from-server, not both")
	case vo.BundleFromServer:
		return b, nil
	case vo.Bundle == "":
		return nil, nil
	case bundleURL(vo.Bundle):
		b.url = vo.Bundle
	default:
		b.file = vo.Bundle
	}
	return b, nil
}

// bundleURL reports whether --bundle names a URL rather than a file: it
// has a scheme (only https is fetched).
func bundleURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, `/\.`)
}

// early reads a bundle file or fetches a bundle URL, before the source is
// read; a bundle from the server comes only with its snapshot (nil here).
func (b *bundleInput) early(ctx context.Context) ([]byte, error) {
	switch {
	case b.fromServer:
		return nil, nil
	case b.url != "":
		data, err := source.FetchBundle(ctx, b.url, "", b.opts)
		if err != nil {
			return nil, fmt.Errorf("--bundle: %w", err)
		}
		return data, nil
	}
	data, err := verify.ReadBundleFile(b.file)
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	return data, nil
}

// errAdvertised marks a refused advertisement (see advertised): the
// server, not the --bundle flag, is at fault.
var errAdvertised = errors.New("the bundle the server advertises")

// advertised returns the bundle the server of snap advertised. A refusal
// (none advertised, a malformed or oversized hint, a URL that fails) fails
// the bundle step, as a bad bundle file does.
func (b *bundleInput) advertised(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	data, err := source.AdvertisedBundle(ctx, snap, b.opts)
	if err == nil {
		// Parsed here too (a chain admitted: the certificate method checks
		// it again), so that a malformed one is the server's fault.
		_, err = verify.ParseBundle(data, true)
		var se *verify.StepError
		if errors.As(err, &se) {
			err = se.Err
		}
	}
	if err != nil {
		return nil, &verify.StepError{Step: verify.StepBundle, Err: fmt.Errorf("%w: %w", errAdvertised, err)}
	}
	return data, nil
}

// writeVerifyFailure reports a verification that failed before it began
// (the server's bundle was refused), as verify reports a failed step.
func writeVerifyFailure(a *app, asJSON bool, verr error) error {
	var err error
	if asJSON {
		err = writeVerifyJSON(a.stdout, verify.NewReport(nil, verr))
	} else {
		err = writeVerifyText(a.stdout, nil, verr)
	}
	if err != nil {
		return err
	}
	return verifyExit(verr, !asJSON)
}

// get returns the bundle to verify snap against, read anew.
func (b *bundleInput) get(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	if b.fromServer {
		return b.advertised(ctx, snap)
	}
	data, err := b.early(ctx)
	if err != nil && b.file != "" {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	return data, err
}

// verifier is the proxy's VerifyFunc of the input.
func (b *bundleInput) verifier(v *verify.Verifier) proxy.VerifyFunc {
	vf := pinbundle.VerifierOf(v, b.get)
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		p, err := vf(ctx, snap)
		return p, withFlagHint(err)
	}
}
