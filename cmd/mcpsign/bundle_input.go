package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
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

// errAdvertised marks a refused advertisement: the server, not the
// --bundle flag, is at fault.
var errAdvertised = pinbundle.ErrAdvertised

// newBundleInput reads the flags; a nil input means no bundle was given.
func newBundleInput(a *app, vo *options.VerifyOptions) (*bundleInput, error) {
	opts := source.BundleOptions{HTTPClient: a.httpClient}
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

// early reads a bundle file or fetches a bundle URL, before the source is
// read; a bundle from the server comes only with its snapshot (nil here).
func (b *bundleInput) early(ctx context.Context) ([]byte, error) {
	if b.FromServer {
		return nil, nil
	}
	data, err := b.Read(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	return data, nil
}

// writeVerifyFailure reports a verification that failed before it began
// (the server's bundle was refused), as verify reports a failed step.
func writeVerifyFailure(a *app, asJSON bool, verr error) error {
	if err := writeVerifyReport(a, asJSON, nil, verr); err != nil {
		return err
	}
	return verifyExit(verr, !asJSON)
}

// writeVerifyReport writes the report of a verification on stdout, as
// JSON or text.
func writeVerifyReport(a *app, asJSON bool, res *verify.Result, verr error) error {
	if asJSON {
		return writeVerifyJSON(a.stdout, verify.NewReport(res, verr))
	}
	return writeVerifyText(a.stdout, res, verr)
}

// get returns the bundle to verify snap against, read anew.
func (b *bundleInput) get(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	if b.FromServer {
		return b.Read(ctx, snap)
	}
	data, err := b.early(ctx)
	if err != nil && b.File != "" {
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

// bundleSet is the bundles of a decision under --policy.
type bundleSet []*bundleInput

// early reads the bundles that come before the source: nil for one the
// server advertises, read with the snapshot (served).
func (s bundleSet) early(ctx context.Context) ([][]byte, error) {
	bundles := make([][]byte, 0, len(s))
	for _, b := range s {
		data, err := b.early(ctx)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	return bundles, nil
}

// served reads the bundles the server of snap advertises into bundles.
func (s bundleSet) served(ctx context.Context, bundles [][]byte, snap *digest.Snapshot) (err error) {
	for i, b := range s {
		if b.FromServer {
			if bundles[i], err = b.Read(ctx, snap); err != nil {
				return err
			}
		}
	}
	return nil
}

// lockBundles re-verify a lock (policy.LockCheck.Bundles): with no
// snapshot, pinbundle.ErrNeedsServer when one is the server's.
func (s bundleSet) lockBundles(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
	bundles, err := s.early(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range s {
		if b.FromServer && snap == nil {
			return nil, pinbundle.ErrNeedsServer
		}
	}
	return bundles, s.served(ctx, bundles, snap)
}

// proxyBundles are the bundles of the proxy's verification, read anew.
func (s bundleSet) proxyBundles(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
	var bundles [][]byte
	for _, b := range s {
		data, err := b.get(ctx, snap)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	return bundles, nil
}
