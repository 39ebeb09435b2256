package options

import (
	"github.com/spf13/pflag"
)

// TrustOptions say which trusted material to verify against: a Sigstore
// trusted_root.json, the public-good root through TUF (cached), or
// enterprise PKI roots. Shared by sign (self-check), verify, pin and proxy.
type TrustOptions struct {
	// TrustedRoot is a trusted_root.json file; empty means the public-good
	// root through TUF.
	TrustedRoot string
	// TUFCache is the TUF metadata cache directory; empty means the default
	// under the user cache directory.
	TUFCache string
	// TUFMirror is the TUF repository URL; empty means public-good.
	TUFMirror string
	// Offline refuses any network fetch: the cached TUF root is used if it
	// is still valid, else the command fails.
	Offline bool
	// CARoots and CAIntermediates are PEM files of enterprise x509 trust
	// for the certificate method.
	CARoots         string
	CAIntermediates string
}

// AddFlags adds the trust flags to fs.
func (o *TrustOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TrustedRoot, "trusted-root", "", "Sigstore trusted_root.json to verify against (default: the public-good root through TUF)")
	fs.StringVar(&o.TUFCache, "tuf-cache", "", "TUF metadata cache directory (default: mcpsign/tuf under the user cache directory)")
	fs.StringVar(&o.TUFMirror, "tuf-mirror", "", "TUF repository URL (default: the Sigstore public-good repository)")
	fs.BoolVar(&o.Offline, "offline", false, "never use the network: use the cached TUF root, and fail if nothing usable is cached")
	fs.StringVar(&o.CARoots, "ca-roots", "", "PEM file of trusted root CA certificates (certificate method)")
	fs.StringVar(&o.CAIntermediates, "ca-intermediates", "", "PEM file of intermediate CA certificates (certificate method)")
}
