package policy

import (
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/source"
)

// BundleLocations are where the entry's bundles come from: given (files or
// https URLs the host names, in order), else the entry's "bundle" (a file,
// a URL or the server's advertised bundle); none when neither names one.
// opts fetch URLs and advertised bundles.
func (r *Resolved) BundleLocations(given []string, opts source.BundleOptions) []pinbundle.Location {
	var out []pinbundle.Location
	switch {
	case len(given) > 0:
		for _, g := range given {
			out = append(out, pinbundle.LocationOf(g, opts))
		}
	case r.Bundle.Kind == BundleServer:
		out = append(out, pinbundle.Location{FromServer: true, Options: opts})
	case r.Bundle.Kind == BundleURL:
		out = append(out, pinbundle.Location{URL: r.Bundle.Location, Options: opts})
	case r.Bundle.Kind == BundleFile:
		out = append(out, pinbundle.Location{File: r.Bundle.Location, Options: opts})
	}
	return out
}
