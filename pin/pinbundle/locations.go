package pinbundle

import (
	"context"

	"github.com/mcpsign/mcpsign/digest"
)

// ReadError is a bundle file or URL that cannot be read (Location.Read);
// it says what the error it wraps says.
type ReadError struct {
	Location Location
	Err      error
}

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Early reads the bundle before the server is read: the file's or the
// URL's (errors *ReadError), nil for the one the server advertises (read
// with its snapshot, Read).
func (l Location) Early(ctx context.Context) ([]byte, error) {
	if l.FromServer {
		return nil, nil
	}
	data, err := l.Read(ctx, nil)
	if err != nil {
		return nil, &ReadError{Location: l, Err: err}
	}
	return data, nil
}

// Fresh reads the bundle anew for the observed definitions snap: the one
// the server advertises, or the file's or the URL's (errors *ReadError).
func (l Location) Fresh(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
	if l.FromServer {
		return l.Read(ctx, snap)
	}
	return l.Early(ctx)
}

// Locations are the bundles of one decision, in order (a policy's
// threshold: one bundle per signer).
type Locations []Location

// Early reads the bundles that come before the server is read
// (Location.Early), in order: nil in the place of one the server
// advertises, which Served reads.
func (ls Locations) Early(ctx context.Context) ([][]byte, error) {
	bundles := make([][]byte, 0, len(ls))
	for _, l := range ls {
		data, err := l.Early(ctx)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	return bundles, nil
}

// Served reads into bundles (as Early returned them) those the server of
// snap advertises.
func (ls Locations) Served(ctx context.Context, bundles [][]byte, snap *digest.Snapshot) (err error) {
	for i, l := range ls {
		if l.FromServer {
			if bundles[i], err = l.Read(ctx, snap); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForLock reads the bundles that re-verify a lock (policy.LockCheck's
// Bundles): Early, then, with no snapshot, ErrNeedsServer when one is the
// server's, else Served.
func (ls Locations) ForLock(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
	bundles, err := ls.Early(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if l.FromServer && snap == nil {
			return nil, ErrNeedsServer
		}
	}
	return bundles, ls.Served(ctx, bundles, snap)
}

// Fresh reads every bundle anew for snap (Location.Fresh), in order: the
// proxy's verification of what it observed.
func (ls Locations) Fresh(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
	bundles := make([][]byte, 0, len(ls))
	for _, l := range ls {
		data, err := l.Fresh(ctx, snap)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	return bundles, nil
}
