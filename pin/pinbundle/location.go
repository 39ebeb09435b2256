package pinbundle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

var (
	// ErrNeedsServer: the bundle is the one the server advertises, read
	// only with the server's definitions (Location.Read with a nil
	// snapshot).
	ErrNeedsServer = errors.New("the bundle is the one the server advertises, read only with the server's definitions")
	// ErrAdvertised marks a bundle the server advertises that is refused
	// (none advertised, a malformed or oversized hint, a URL that fails, a
	// bundle that does not parse): the server, not a file, is at fault.
	ErrAdvertised = errors.New("the bundle the server advertises")
)

// Location is where a bundle comes from: a file, an https URL, or the
// server itself (the bundle it advertises, docs/DISCOVERY.md). However it
// comes, it is verified the same way.
type Location struct {
	File, URL  string
	FromServer bool
	// Options fetch a URL and an advertised bundle.
	Options source.BundleOptions
}

// LocationOf reads s as a bundle location: a URL when it has a scheme
// (only https is fetched), else a file.
func LocationOf(s string, opts source.BundleOptions) Location {
	if scheme, _, ok := strings.Cut(s, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, `/\.`) {
		return Location{URL: s, Options: opts}
	}
	return Location{File: s, Options: opts}
}

// Read returns the bundle: the file's bytes, the URL's (bounded), or the
// one the server of snap advertises (ErrNeedsServer when snap is nil). A
// refused advertisement fails the bundle step (a *verify.StepError
// wrapping ErrAdvertised), as a bad bundle file does.
func (l Location) Read(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	switch {
	case l.FromServer && snap == nil:
		return nil, ErrNeedsServer
	case l.FromServer:
		return l.advertised(ctx, snap)
	case l.URL != "":
		return source.FetchBundle(ctx, l.URL, "", l.Options)
	}
	return verify.ReadBundleFile(l.File)
}

func (l Location) advertised(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	data, err := source.AdvertisedBundle(ctx, snap, l.Options)
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
		return nil, &verify.StepError{Step: verify.StepBundle, Err: fmt.Errorf("%w: %w", ErrAdvertised, err)}
	}
	return data, nil
}

// ReadAll reads the bundles at locs for snap (Location.Read), in order:
// Locations.Fresh.
func ReadAll(ctx context.Context, locs []Location, snap *digest.Snapshot) ([][]byte, error) {
	return Locations(locs).Fresh(ctx, snap)
}
